package event

import (
	"context"
	"testing"
	"time"
)

type settleTestKey struct{}

// TestSettleContexts checks what a settle's context promises: the
// parent's values, not its cancellation, a deadline settleTimeout to
// settleTimeout+settleSlack away, and an end when the Service stops.
func TestSettleContexts(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), settleTestKey{}, "v"))
	s := newSettleContexts(parent)
	cancel()
	var got []context.Context
	for range 3 {
		before := time.Now()
		ctx := s.get()
		after := time.Now()
		got = append(got, ctx)
		if ctx.Err() != nil {
			t.Fatalf("the context ended with its parent: %v", ctx.Err())
		}
		if v := ctx.Value(settleTestKey{}); v != "v" {
			t.Errorf("the context's value is %v, want the parent's", v)
		}
		dl, ok := ctx.Deadline()
		if !ok || dl.Before(before.Add(settleTimeout)) || dl.After(after.Add(settleTimeout+settleSlack)) {
			t.Errorf("deadline %v (%v), want between %v and %v", dl, ok, before.Add(settleTimeout), after.Add(settleTimeout+settleSlack))
		}
	}
	s.stop()
	for i, ctx := range got {
		if ctx.Err() == nil {
			t.Errorf("context %d has not ended with stop", i)
		}
	}
}
