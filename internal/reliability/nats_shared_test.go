package reliability

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

const (
	sharedMessages  = 1500
	sharedProcesses = 3
	sharedWorkers   = 4
	sharedTopic     = "shared"
	sharedSub       = "workers"
	// sharedLease is long enough that no delivery outlives it: every
	// message is then delivered, and acked, exactly once.
	sharedLease = 20 * time.Second
)

// On NATS, three OS processes share one named subscription and drain it:
// every message is acked exactly once (the consumer hands each message to
// one process at a time, and no Ack is lost or doubled), every process
// takes part, and the subscription is left empty.
func TestNatsSharedSubscription(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	ps := natsConnect(t, url, natspubsub.Options{Prefix: prefix, Lease: sharedLease})
	// The subscription exists before the first publish: it gets them all.
	sub, err := ps.Subscribe(ctx, sharedTopic, sharedSub)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	cs := newNatsConsumers(t, url, prefix, sharedTopic, sharedSub, sharedWorkers, 0, sharedLease)
	for range sharedProcesses {
		cs.start()
	}
	if err := cs.waitReady(ctx, sharedProcesses); err != nil {
		t.Fatalf("the consumers did not subscribe: %v; their output:\n%s", err, cs.out.Tail(4000))
	}
	data := payloads("s", sharedMessages)
	enqueueParallel(t, ps.Topic(sharedTopic), data)
	if err := cs.waitAcked(ctx, sharedMessages); err != nil {
		t.Fatalf("%v; consumers' output:\n%s", err, cs.out.Tail(4000))
	}
	if err := cs.stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, err := range cs.failures() {
		t.Errorf("%v; output:\n%s", err, cs.out.Tail(4000))
	}

	r := cs.tally(data)
	if r.twice != 0 || r.strangers != 0 {
		t.Errorf("%d messages acked more than once, %d unknown payloads acked: want 0", r.twice, r.strangers)
	}
	for p := range sharedProcesses {
		if r.byProc[p] == 0 {
			t.Errorf("consumer process %d acked nothing: the subscription is not shared (acks per process %v)", p, r.byProc)
		}
	}
	st, err := admin.TopicStats(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != 0 || st.Processing != 0 || st.Scheduled != 0 || st.Dead != 0 {
		t.Errorf("after the drain subscription %q holds %+v, want nothing", sharedSub, st)
	}
	// The subscription stays shared and usable: the parent's handle gets
	// the next message.
	if err := sub.Enqueue(ctx, []byte("after")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.Dequeue(ctx)
	switch {
	case err != nil:
		t.Fatalf("Dequeue on the parent's handle: %v", err)
	case string(m.Data()) != "after":
		t.Errorf("the parent's handle got %q, want %q", m.Data(), "after")
	}
	if err := m.Ack(ctx); err != nil && !errors.Is(err, pubsub.ErrSettled) {
		t.Fatal(err)
	}
	result{
		fault: "3 processes on one named subscription (NATS)", messages: sharedMessages,
		acked: sharedMessages - r.lost, duplicates: r.redeliv,
		note: fmt.Sprintf("acks per process %v, %d acked twice; %d workers each, lease %v", r.byProc, r.twice, sharedWorkers, sharedLease),
	}.report(t)
}
