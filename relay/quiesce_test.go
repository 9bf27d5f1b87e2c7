package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/relay"
)

// heldTopic is a destination whose unique enqueues each say which data
// came in, then wait until release is closed.
type heldTopic struct {
	pubsub.Topic
	entered chan string
	release chan struct{}
}

func (h heldTopic) Unwrap() pubsub.Topic { return h.Topic }

func (h heldTopic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	h.entered <- string(data)
	select {
	case <-h.release:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return pubsub.EnqueueUnique(ctx, h.Topic, key, data)
}

// TestRelayHoldsWhileQuiesced: a Relay reading a quiesced PubSub keeps
// running and takes nothing, and Quiesce waits for the message it was
// moving; after Resume it moves what was enqueued meanwhile.
func TestRelayHoldsWhileQuiesced(t *testing.T) {
	const patience = 15 * time.Second
	ps := channelpubsub.New()
	t.Cleanup(func() { _ = ps.Close() })
	src := ps.Topic("src")
	dst := heldTopic{Topic: ps.Topic("dst"), entered: make(chan string, 10), release: make(chan struct{})}
	var failures []pubsub.Failure
	r, err := relay.New(src, dst, relay.Options{Source: "src", Workers: 2, OnFailure: func(f pubsub.Failure) { failures = append(failures, f) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()

	bg := context.Background()
	if err := src.Enqueue(bg, []byte("a")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-dst.entered:
		if got != "a" {
			t.Fatalf("the relay moves %q, want a", got)
		}
	case <-time.After(patience):
		t.Fatal("the relay did not take a")
	}

	quiesced := make(chan error, 1)
	go func() { quiesced <- admin.Quiesce(bg, ps) }()
	for {
		shut, err := admin.IsQuiesced(bg, ps)
		if err != nil {
			t.Fatal(err)
		}
		if shut {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := src.Enqueue(bg, []byte("b")); err != nil {
		t.Fatalf("Enqueue while quiesced: %v", err)
	}
	select {
	case err := <-quiesced:
		t.Fatalf("Quiesce returned (%v) while the relay moved a", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(dst.release)
	select {
	case err := <-quiesced:
		if err != nil {
			t.Fatalf("Quiesce: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Quiesce did not return once the relay settled a")
	}
	select {
	case got := <-dst.entered:
		t.Fatalf("the relay took %q while quiesced", got)
	case <-time.After(300 * time.Millisecond):
	}
	if s, err := admin.TopicStats(bg, src); err != nil || s.Ready != 1 || s.Processing != 0 {
		t.Fatalf("source stats while quiesced = %+v, %v; want b ready, nothing in hand", s, err)
	}
	if s := r.Stats(); s.Relayed != 1 || s.Failed != 0 {
		t.Fatalf("relay stats while quiesced = %+v, want 1 relayed, none failed", s)
	}

	if err := admin.ResumeConsumers(bg, ps); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-dst.entered:
		if got != "b" {
			t.Fatalf("after Resume the relay moves %q, want b", got)
		}
	case <-time.After(patience):
		t.Fatal("the relay did not go on after Resume")
	}
	for _, want := range []string{"a", "b"} {
		dctx, dcancel := context.WithTimeout(bg, patience)
		m, err := dst.Topic.Dequeue(dctx)
		dcancel()
		if err != nil {
			t.Fatalf("destination: %v", err)
		}
		if string(m.Data()) != want {
			t.Fatalf("destination got %q, want %q", m.Data(), want)
		}
		if err := m.Ack(bg); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(failures) != 0 {
		t.Fatalf("the relay reported %v", failures)
	}
}
