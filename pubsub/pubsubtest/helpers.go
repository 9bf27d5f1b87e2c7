package pubsubtest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// patience bounds every wait for something that should happen; it is long
// so that a slow machine does not fail a correct backend.
const patience = 15 * time.Second

// newPubSub makes a fresh backend for one case.
func newPubSub(t *testing.T, h Harness, cfg Config) pubsub.PubSub {
	t.Helper()
	ps := h.New(t, cfg)
	if ps == nil {
		t.Fatal("pubsubtest: Harness.New returned nil")
	}
	return ps
}

// open returns the topic name of ps, closed when the test ends.
func open(t *testing.T, ps pubsub.PubSub, name string) pubsub.Topic {
	t.Helper()
	tp, err := pubsub.OpenTopic(ps, name)
	if err != nil {
		t.Fatalf("OpenTopic(%q): %v", name, err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	return tp
}

func enqueue(t *testing.T, tp pubsub.Topic, data ...string) {
	t.Helper()
	for _, d := range data {
		if err := tp.Enqueue(context.Background(), []byte(d)); err != nil {
			t.Fatalf("Enqueue(%q): %v", d, err)
		}
	}
}

// dequeue waits for the next message; it fails the test if none comes.
func dequeue(t *testing.T, tp pubsub.Topic) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	if m == nil {
		t.Fatal("Dequeue returned a nil message and no error")
	}
	return m
}

// expectNone fails the test if a message is delivered within d.
func expectNone(t *testing.T, tp pubsub.Topic, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err == nil {
		t.Fatalf("got message %s %q, want none within %v", m.ID(), m.Data(), d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dequeue while idle: %v, want context.DeadlineExceeded", err)
	}
}

func ack(t *testing.T, m pubsub.Message) {
	t.Helper()
	if err := m.Ack(context.Background()); err != nil {
		t.Fatalf("Ack %s: %v", m.ID(), err)
	}
}

func nack(t *testing.T, m pubsub.Message) {
	t.Helper()
	if err := m.Nack(context.Background()); err != nil {
		t.Fatalf("Nack %s: %v", m.ID(), err)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one matching %v", what, err, target)
	}
}

// wantData checks m carries data.
func wantData(t *testing.T, m pubsub.Message, data string) {
	t.Helper()
	if string(m.Data()) != data {
		t.Fatalf("got message %q, want %q", m.Data(), data)
	}
}

// wantAttempt checks m's delivery number where the backend counts them.
func wantAttempt(t *testing.T, h Harness, m pubsub.Message, want int) {
	t.Helper()
	if !h.Abilities.Attempts {
		return
	}
	if got := pubsub.Attempt(m); got != want {
		t.Fatalf("message %s: attempt %d, want %d", m.ID(), got, want)
	}
}

// need skips the case unless the harness declares the ability it tests.
func need(t *testing.T, declared bool, what string) {
	t.Helper()
	if !declared {
		t.Skipf("the harness does not declare %s", what)
	}
}

// atLeast checks that at least want passed since start, allowing 10 % for
// clocks read in different places (a database's now() and Go's).
func atLeast(t *testing.T, what string, start time.Time, want time.Duration) {
	t.Helper()
	if got := time.Since(start); got < want*9/10 {
		t.Fatalf("%s after %v, want no sooner than %v", what, got, want)
	}
}

func closeBackend(t *testing.T, ps pubsub.PubSub) {
	t.Helper()
	if c, ok := ps.(io.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatalf("closing the backend: %v", err)
		}
	}
}

func deadLetters(t *testing.T, tp pubsub.Topic) []admin.DeadMessage {
	t.Helper()
	dead, err := admin.ListDead(context.Background(), tp, 0)
	if err != nil {
		t.Fatalf("ListDead: %v", err)
	}
	return dead
}
