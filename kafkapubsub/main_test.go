package kafkapubsub_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
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
	// At most 2 parallel tests (make test passes -parallel 6): in
	// share-group mode a member polls one record per Receive and waits
	// 50 ms on each broker with nothing for it, so a subscription's one
	// consumer gets ~20 records a second, and more of the suite's cases
	// at once on the cluster starved CompetingConsumersInASubscription
	// past its 15 s (BENCHMARKS.md's Kafka rows: drain ~155 msgs/s).
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > maxParallel {
			_ = f.Value.Set(strconv.Itoa(maxParallel))
		}
	}
	goleak.VerifyTestMain(m)
}

// maxParallel is the most tests of the package run at once.
const maxParallel = 2
