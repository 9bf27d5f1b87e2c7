package natspubsub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A topic's stream keeps a message until every subscription acked it, and
// then lets it go.
func TestAckedMessagesArePurged(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := ps.Subscribe(ctx, "prune", "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ps.Subscribe(ctx, "prune", "b")
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		if err := a.Enqueue(ctx, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	drain := func(tp pubsub.Topic) {
		t.Helper()
		for range n {
			m, err := tp.Dequeue(ctx)
			if err == nil {
				err = m.Ack(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stored := func() uint64 {
		t.Helper()
		list := jetStream(t, url).ListStreams(ctx, jetstream.WithStreamListSubject(prefix+".t.>"))
		var msgs uint64
		for info := range list.Info() {
			msgs = info.State.Msgs
		}
		if err := list.Err(); err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	drain(a)
	time.Sleep(3 * time.Second) // several prunes
	if got := stored(); got != n {
		t.Fatalf("after one of two subscriptions acked every message the stream holds %d, want all %d", got, n)
	}
	drain(b)
	deadline := time.Now().Add(10 * time.Second)
	for stored() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after every subscription acked every message the stream still holds %d", stored())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
