package relay_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv names the role of a child process: the crash test runs copies
// of its own binary as relays, and kills them. A child does its job and
// exits; it runs no test.
const childEnv = "RELAY_KAFKA_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "relay test child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runChild runs the job of a child process.
func runChild(role string) error {
	switch role {
	case "relay":
		return childRelay()
	}
	return fmt.Errorf("unknown role %q", role)
}
