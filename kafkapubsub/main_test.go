package kafkapubsub_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests, or, in a copy of the test binary that a test
// started as a child process (childEnv set, process_test.go), the child's
// job: it runs no test and exits.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		if err := runChild(cfg); err != nil {
			fmt.Fprintf(os.Stderr, "kafkapubsub test child: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
