package channelpubsub

import (
	"context"
	"fmt"
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
		sh := &q.live[shard]
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
// where the coarse clock (one sweep, 250 ms with the default lease, behind)
// still reads the second before. Each round starts at a second boundary:
// the case is a matter of the wall clock. Each round has a topic of its
// own, so its ack alone counts.
func TestAckedSinceMissesNoLaterAck(t *testing.T) {
	t.Parallel()
	ps := New()
	t.Cleanup(func() { _ = ps.Close() })
	ctx := context.Background()
	for round := range 3 {
		tp := ps.Topic(fmt.Sprintf("acks%d", round))
		t.Cleanup(func() { _ = tp.Close() })
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
		if n, err := admin.AckedSince(ctx, tp, since); n != 1 || err != nil {
			t.Fatalf("round %d: AckedSince(%s) right after an ack = %d, %v; want 1, nil",
				round, since.Format(time.RFC3339Nano), n, err)
		}
	}
}

// TestSweepLog checks the second AckedSince counts from: that of the last
// sweep stored by since, found in since's second when one was stored there
// by since, else in the latest second before with a sweep.
func TestSweepLog(t *testing.T) {
	const s0 = int64(1_800_000_000) * int64(time.Second) // the line's nanoseconds
	ms := int64(time.Millisecond)
	var l sweepLog
	sec := func(ns int64) int64 { return ns / int64(time.Second) }
	if got, want := l.firstSecond(s0), sec(s0)-ackWindow+1; got != want {
		t.Errorf("no sweep: from %d, want the window's start %d", got, want)
	}
	l.record(s0+900*ms, s0+900*ms+1)
	l.record(s0+1150*ms, s0+1150*ms+1)
	l.record(s0+1999*ms, s0+2001*ms) // stamped in one second, stored in the next
	for _, c := range []struct {
		since int64
		want  int64
	}{
		{s0 + 950*ms, sec(s0)},
		{s0 + 1050*ms, sec(s0)}, // no sweep of s0+1 stored yet: the one of s0 is the last
		{s0 + 1200*ms, sec(s0) + 1},
		{s0 + 2000*ms, sec(s0) + 1},
		{s0 + 2500*ms, sec(s0) + 1}, // the sweep stored at 2.001 s read 1.999 s
		{s0 + 5000*ms, sec(s0) + 1},
	} {
		if got := l.firstSecond(c.since); got != c.want {
			t.Errorf("since s0%+dms: from s0%+d, want s0%+d", (c.since-s0)/ms, got-sec(s0), c.want-sec(s0))
		}
	}
}
