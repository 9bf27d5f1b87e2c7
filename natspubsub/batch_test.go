package natspubsub_test

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A batch is not all or none on JetStream: an item the server refuses is
// named in the *pubsub.BatchError, and the items around it are stored and
// delivered, in order. The topic's stream is given a max_msg_size behind
// the PubSub's back (a plain nats.go client), so that the server, not
// conveyor's own check, refuses the one item over it.
func TestPipelinedBatchPartial(t *testing.T) {
	t.Parallel()
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ps := connectTo(t, url, natspubsub.Options{Prefix: prefix})
	tp := ps.Topic("partial")
	t.Cleanup(func() { _ = tp.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tp.Enqueue(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	js := jetStream(t, url)
	var stream jetstream.Stream
	for s := range js.ListStreams(ctx, jetstream.WithStreamListSubject(prefix+".t.>")).Info() {
		cfg := s.Config
		cfg.MaxMsgSize = 512
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatalf("setting the stream's max_msg_size: %v", err)
		}
		var err error
		if stream, err = js.Stream(ctx, cfg.Name); err != nil {
			t.Fatal(err)
		}
	}
	if stream == nil {
		t.Fatal("no stream of the topic")
	}
	big := make([]byte, 2048)
	_, _ = rand.Read(big)
	err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("one"), big, []byte("two"), []byte("three")})
	var be *pubsub.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("EnqueueBatch with an item over the stream's max_msg_size: %v, want a *pubsub.BatchError", err)
	}
	if be.Len != 4 || !slices.Equal(be.Failed, []int{1}) || len(be.Errs) != 1 {
		t.Fatalf("BatchError %+v: want item 1 of 4 failed, alone", be)
	}
	if !errors.Is(err, pubsub.ErrTooLarge) {
		t.Errorf("the refused item's error %v does not wrap pubsub.ErrTooLarge", be.Errs[0])
	}
	for _, want := range []string{"before", "one", "two", "three"} {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatalf("Dequeue, waiting for %q: %v", want, err)
		}
		if string(m.Data()) != want {
			t.Fatalf("delivered %q, want %q", m.Data(), want)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
