package sqlitepubsub_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a child process when a test re-executed
// it to play another process on a file (process_test.go); otherwise the
// tests, checking that none leaks a goroutine.
func TestMain(m *testing.M) {
	if role := os.Getenv(childRole); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}
