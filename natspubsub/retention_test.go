package natspubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A dead message is kept for Options.DeadRetention, the dead-letter
// stream's MaxAge: the server deletes it afterwards.
func TestDeadRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := connect(t, natspubsub.Options{DeadRetention: time.Second})
	tp := ps.Topic("dead-retention")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	m, err := tp.Dequeue(dctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pubsub.Reject(ctx, m, errors.New("no")); err != nil {
		t.Fatal(err)
	}
	if dead, err := admin.ListDead(ctx, tp, 0); err != nil || len(dead) != 1 {
		t.Fatalf("ListDead at once = %d messages, %v; want 1, nil", len(dead), err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		dead, err := admin.ListDead(ctx, tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ListDead 10s after a death with DeadRetention 1s: %d messages, want 0", len(dead))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestDeadRetentionOption(t *testing.T) {
	t.Parallel()
	_, err := natspubsub.Connect("nats://127.0.0.1:1", natspubsub.Options{DeadRetention: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "DeadRetention") {
		t.Fatalf("Connect with DeadRetention 1ms: %v, want an error naming the field", err)
	}
}
