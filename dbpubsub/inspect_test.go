package dbpubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// TestCancelBufferedRow: rows a process claimed ahead for its consumers
// (prefetch) are processing; Cancel refuses them and leaves them alone,
// and once the buffer gives them back (no Dequeue wants them) Cancel
// deletes them for good: a cancelled message is never delivered.
func TestCancelBufferedRow(t *testing.T) {
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Prefetch: 8})
	tp := ps.Topic("buffered")
	for _, d := range []string{"first", "a", "b", "c"} {
		if err := tp.Enqueue(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := tp.Dequeue(ctx) // claims the others ahead, into the buffer
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	rest, err := admin.Peek(ctx, tp, admin.PeekOptions{State: admin.StateProcessing})
	if err != nil {
		t.Fatal(err)
	}
	peeked := time.Now()
	if len(rest.Messages) != 3 {
		// The buffer gives rows back 50 ms after no Dequeue wants them.
		t.Skipf("Peek(processing) after a Dequeue with prefetch: %d messages, not the 3 claimed ahead: the buffer gave them back before the test looked", len(rest.Messages))
	}
	refused := 0
	for _, info := range rest.Messages {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := admin.Cancel(ctx, tp, info.ID)
			if err == nil {
				break
			}
			if !errors.Is(err, admin.ErrWrongState) || time.Now().After(deadline) {
				t.Fatalf("Cancel(%s) of a row claimed ahead: %v, want ErrWrongState until the buffer gives it back", info.ID, err)
			}
			refused++
			time.Sleep(20 * time.Millisecond)
		}
	}
	if refused == 0 {
		if time.Since(peeked) > time.Second {
			t.Skip("the test was too slow to cancel rows before the buffer gave them back")
		}
		t.Fatal("Cancel deleted rows still claimed ahead for this process's consumers")
	}
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if m, err := tp.Dequeue(dctx); err == nil {
		t.Fatalf("a cancelled message was delivered: %s %q", m.ID(), m.Data())
	}
	if s, err := admin.TopicStats(ctx, tp); err != nil || s != (admin.Stats{}) {
		t.Fatalf("Stats after cancelling everything = %+v, %v; want all zero", s, err)
	}
}
