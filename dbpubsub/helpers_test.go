package dbpubsub_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
)

// flush writes the acks ps queued (its default acks return once queued),
// for a test that reads the rows with SQL next.
func flush(t testing.TB, ps *dbpubsub.PubSub) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

var (
	newStore  = dbpubsubtest.NewStore
	newPubSub = dbpubsubtest.New
	openDB    = dbpubsubtest.OpenDB
)

// child is a copy of the test binary running one test as a consumer
// process, its output kept for the failure message.
type child struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startChild starts the test binary running test run alone, with env
// added to its environment; it is killed when t ends.
func startChild(t *testing.T, run string, env ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1", "-test.v")}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	return c
}

// waitChild waits up to d for c, the consumer called name, to exit, and
// fails t if it fails or does not exit.
func waitChild(t *testing.T, c *child, name string, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v; its output:\n%s", name, err, c.out.String())
		}
	case <-time.After(d):
		t.Fatalf("%s did not finish in %v; its output:\n%s", name, d, c.out.String())
	}
}
