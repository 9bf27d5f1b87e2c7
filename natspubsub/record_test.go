package natspubsub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A slow handler, which extends its lease and works past it, does not make
// the messages behind it die unseen with MaxAttempts 1: each is handled
// once, at attempt 1, and none is dead.
func TestSlowHandlerMessagesBehindDoNotDie(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const lease, work, n = time.Second, 1500 * time.Millisecond, 4
	ps := connect(t, natspubsub.Options{Lease: lease, Retry: pubsub.RetryPolicy{MaxAttempts: 1}})
	tp := ps.Topic("slow-handler")
	for i := range n {
		if err := tp.Enqueue(ctx, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	handled := map[string]int{}
	for len(handled) < n {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			dead, _ := admin.ListDead(context.Background(), tp, 0)
			t.Fatalf("Dequeue after %d of %d messages: %v; dead: %d", len(handled), n, err, len(dead))
		}
		handled[string(m.Data())]++
		if m.(pubsub.Attempter).Attempt() != 1 {
			t.Errorf("message %s at attempt %d, want 1", m.Data(), m.(pubsub.Attempter).Attempt())
		}
		if err := pubsub.ExtendLease(ctx, m, 2*work); err != nil {
			t.Fatal(err)
		}
		time.Sleep(work) // the handler's work, past its first lease
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := admin.ListDead(ctx, tp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 0 {
		t.Fatalf("%d messages dead, none handed to a handler twice: %+v", len(dead), dead[0])
	}
}

// Messages a process fetched ahead and gives back when it closes are not
// dead for it with MaxAttempts 1: another process gets each at attempt 1.
func TestGivenBackMessagesDoNotDie(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, first = 400, 100
	o := natspubsub.Options{Lease: 8 * time.Second, Retry: pubsub.RetryPolicy{MaxAttempts: 1}}
	url := natstest.URL(t)
	o.Prefix = natstest.Prefix(t, url)
	a, b := connectTo(t, url, o), connectTo(t, url, o)
	ta, tb := a.Topic("given-back"), b.Topic("given-back")
	for i := range n {
		if err := ta.Enqueue(ctx, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for range first { // fast, so that a fetches ahead
		m, err := ta.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil { // gives back what it kept
		t.Fatal(err)
	}
	for i := first; i < n; i++ {
		m, err := tb.Dequeue(ctx)
		if err != nil {
			dead, _ := admin.ListDead(context.Background(), tb, 0)
			t.Fatalf("Dequeue of message %d of %d: %v; %d dead", i+1, n, err, len(dead))
		}
		if got := m.(pubsub.Attempter).Attempt(); got != 1 {
			t.Errorf("message %s at attempt %d, want 1: no handler saw it before", m.Data(), got)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
