package reliability

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Regression tests of bugs this package found: channelpubsub's EnqueueBatch
// left partial batches, and then, once all or none, let a later Enqueue of
// the same producer overtake the part of a batch waiting for room.
func TestBatchThenEnqueueKeepsOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s := b.new(t, config{Capacity: 2})
		tp := s.ps.Topic("order")
		if err := pubsub.EnqueueBatch(ctx, tp, payloads("b", 5)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- tp.Enqueue(ctx, []byte("after")) }() // blocks on a full channel
		time.Sleep(100 * time.Millisecond)
		var got []string
		for range 6 {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(m.Data()))
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := "b-0 b-1 b-2 b-3 b-4 after"
		if g := strings.Join(got, " "); g != want {
			t.Errorf("one consumer got %q, want the order of enqueueing %q", g, want)
		}
	})
}
