package channelpubsub

import (
	"testing"
	"time"
)

// TestAckCountRing checks the ring AckedSince reads: acks counted by the
// second, a second reused after ackWindow seconds starting from zero, and
// seconds older than the window counting nothing.
func TestAckCountRing(t *testing.T) {
	const start = int64(1_800_000_000) // unix seconds
	at := func(sec int64) int64 { return sec*int64(time.Second) + 123 }
	var c ackCount
	for range 3 {
		c.add(at(start))
	}
	c.add(at(start + 1))
	for _, tc := range []struct {
		name      string
		from, now int64
		want      int64
	}{
		{"all", start - 10, start + 1, 4},
		{"from the second second", start + 1, start + 1, 1},
		{"in the future", start + 2, start + 1, 0},
		{"from before the window", 0, start + 5, 4},
		{"once the window passed", start - 10, start + ackWindow, 1},
	} {
		if got := c.since(tc.from, tc.now); got != tc.want {
			t.Errorf("%s: since(%d, %d) = %d, want %d", tc.name, tc.from, tc.now, got, tc.want)
		}
	}
	// start's bucket taken again ackWindow seconds later: the old acks go.
	c.add(at(start + ackWindow))
	if got := c.since(start, start+ackWindow); got != 2 {
		t.Errorf("after its bucket was reused: since(start) = %d, want 2 (one ack at start+1, one at start+%d)", got, ackWindow)
	}
}
