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
	ps := connectTo(t, url, natspubsub.Options{Prefix: prefix})
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

// A topic stream made with interest retention (by an earlier version) is
// used as it is: the server cannot change a stream's retention.
func TestInterestStreamKept(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Learn the topic stream's configuration, then make the stream anew
	// with interest retention.
	if err := connectTo(t, url, natspubsub.Options{Prefix: prefix}).Provision(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	js := jetStream(t, url)
	list := js.ListStreams(ctx, jetstream.WithStreamListSubject(prefix+".t.>"))
	var cfg jetstream.StreamConfig
	for info := range list.Info() {
		cfg = info.Config
	}
	if err := list.Err(); err != nil || cfg.Name == "" {
		t.Fatalf("the topic's stream: %q, %v", cfg.Name, err)
	}
	if err := js.DeleteStream(ctx, cfg.Name); err != nil {
		t.Fatal(err)
	}
	cfg.Retention = jetstream.InterestPolicy
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tp := connectTo(t, url, natspubsub.Options{Prefix: prefix}).Topic("old")
	if err := tp.Enqueue(ctx, []byte("kept")); err != nil {
		t.Fatalf("Enqueue on a topic whose stream has interest retention: %v", err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil || string(m.Data()) != "kept" {
		t.Fatalf("Dequeue = %v, %v; want the message", m, err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}
