package channelpubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A dead message is forgotten Options.DeadRetention after it died, and its
// unique key with it; a negative DeadRetention keeps it.
func TestDeadRetention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		retention time.Duration
		wantKept  bool
	}{{"Short", 200 * time.Millisecond, false}, {"Forever", -1, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{DeadRetention: c.retention})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			tp := ps.Topic("t")
			if ok, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("x")); err != nil || !ok {
				t.Fatalf("EnqueueUnique = %v, %v", ok, err)
			}
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := pubsub.Reject(ctx, m, errors.New("no")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(600 * time.Millisecond)
			dead, err := admin.ListDead(ctx, tp, 0)
			if err != nil {
				t.Fatal(err)
			}
			if kept := len(dead) == 1; kept != c.wantKept {
				t.Fatalf("%d dead messages 600ms after the death, want kept %v", len(dead), c.wantKept)
			}
			ok, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("again"))
			if err != nil || ok == c.wantKept {
				t.Fatalf("EnqueueUnique of the dead message's key = %v, %v; want %v", ok, err, !c.wantKept)
			}
		})
	}
}
