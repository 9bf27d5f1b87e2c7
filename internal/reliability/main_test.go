package reliability

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv names the role of a child process: the tests run copies of
// their own binary as consumers (TestConsumerCrash, and on NATS
// TestNatsSharedSubscription and TestNatsConsumerCrash) and migrators
// (TestBadInput/migrations). A child does its job and exits; it runs no test.
const childEnv = "RELIABILITY_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "reliability child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runChild runs the job of a child process.
func runChild(role string) error {
	switch role {
	case "consume":
		return childConsume()
	case "migrate":
		return childMigrate()
	case "nats-consume":
		return childNatsConsume()
	}
	return fmt.Errorf("unknown role %q", role)
}
