package channelpubsub

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// TestAckCount checks the counts AckedSince reads: acks counted by the
// second, across shards whose tallies move into the ring only when a later
// second comes, a bucket reused after ackWindow seconds, a tally too old
// for its bucket dropped, and seconds older than the window counting
// nothing.
func TestAckCount(t *testing.T) {
	const start = int64(1_800_000_000) // unix seconds
	q := &queue{}
	ack := func(shard int, sec int64) {
		sh := &q.inflight[shard]
		sh.mu.Lock()
		q.countAck(sh, sec)
		sh.mu.Unlock()
	}
	want := func(what string, from, now, n int64) {
		t.Helper()
		if got := q.ackedSince(from, now); got != n {
			t.Errorf("%s: ackedSince(start%+d, start%+d) = %d, want %d", what, from-start, now-start, got, n)
		}
	}
	ack(0, start)
	ack(0, start)
	ack(1, start)
	ack(0, start+1) // moves shard 0's 2 acks of start into the ring
	want("all", start-10, start+1, 4)
	want("from the second second", start+1, start+1, 1)
	want("in the future", start+2, start+1, 0)
	want("from before the window", 0, start+5, 4)
	want("once the window passed", start-10, start+ackWindow, 1)

	// start's bucket taken by a second ackWindow later: its acks go, and
	// shard 1's tally of start, moved in after, is dropped rather than
	// take the bucket back. The window is now start+2 to start+ackWindow+1.
	ack(2, start+ackWindow)
	ack(2, start+ackWindow+1)
	ack(1, start+ackWindow+1)
	want("after start's bucket was reused", start, start+ackWindow+1, 3)
	want("only the latest second", start+ackWindow+1, start+ackWindow+1, 2)
}

// TestAckedSinceMissesNoLaterAck: an ack made right after since is counted
// by AckedSince(since), even when since is just past a second boundary,
// where the PubSub's coarse lease clock (one sweep, 250 ms with the
// default lease, behind) still reads the second before. Each round starts
// at a second boundary: the case is a matter of the wall clock.
func TestAckedSinceMissesNoLaterAck(t *testing.T) {
	t.Parallel()
	ps := New()
	t.Cleanup(func() { _ = ps.Close() })
	tp := ps.Topic("acks")
	t.Cleanup(func() { _ = tp.Close() })
	ctx := context.Background()
	for round := range 3 {
		if err := tp.Enqueue(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		since := time.Now()
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		// The previous round's ack was in an earlier second: this one
		// alone counts.
		if n, err := admin.AckedSince(ctx, tp, since); n != 1 || err != nil {
			t.Fatalf("round %d: AckedSince(%s) right after an ack = %d, %v; want 1, nil",
				round, since.Format(time.RFC3339Nano), n, err)
		}
	}
}
