package channelpubsub

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.AckCounter = (*subscription)(nil)

// AckedSince counts the acks of the handle's subscription at or after since
// (see admin.AckCounter). Acks are counted by the second of the real time
// (time.Now) they were made at: every ack of the second since falls in is
// counted, even one made a little before since, and no ack made at or after
// since is missed; a since in the future counts 0. The subscription remembers
// the acks of its last 1024 seconds (about 17 minutes); a since older than
// that counts those only. A named subscription that does not exist wraps
// pubsub.ErrNoSubscription.
func (s *subscription) AckedSince(_ context.Context, since time.Time) (int64, error) {
	q, err := s.open(false)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	if since.After(now) {
		return 0, nil // not the acks of now's second
	}
	return q.ackedSince(q.ps.ackSecond(since.Sub(q.ps.epoch)), q.ps.ackSecond(now.Sub(q.ps.epoch))), nil
}

// ackWindow is how many seconds back a subscription counts its acks.
const ackWindow = 1024

// Acks are counted where an Ack already holds a lock: each inflight shard
// counts the acks of its latest second under its mu (endLease), and moves
// them into the queue's ring of per-second buckets when an ack of a later
// second comes. An Ack thus costs a clock read and an increment, no atomic
// operation on a line its subscription's other consumers write, and no
// allocation. The clock read is the real time, not the PubSub's coarse
// lease clock: that one lags by up to a sweep, more when the sweeper is
// late, so an ack made just after a caller's since, a second boundary
// between them, would fall in the second before since's and never be
// counted. It is read as the monotonic time elapsed since the store was
// made (time.Since reads one clock, time.Now two), and a caller's since
// is placed on the same line (since.Sub(epoch)), so both agree even when
// the wall clock is stepped.

// ackSecond is the unix second, on the store's line, of the instant
// elapsed after the store's epoch.
func (ps *store) ackSecond(elapsed time.Duration) int64 {
	return (ps.epochNano + int64(elapsed)) / int64(time.Second)
}

// ackTally is the acks of one second that a shard has not yet moved into
// the ring. Guarded by the shard's mu.
type ackTally struct {
	sec, n int64
}

// countAck counts an ack of unix second sec (ackSecond) in sh. Called with sh.mu held.
func (q *queue) countAck(sh *inflightShard, sec int64) {
	if t := &sh.acks; t.sec != sec {
		if t.n > 0 {
			q.acks.add(t.sec, t.n)
		}
		t.sec, t.n = sec, 0
	}
	sh.acks.n++
}

// ackedSince sums the acks from second from to second now (unix seconds),
// as far back as the ring remembers. It holds every shard's mu, so that no
// tally moves into the ring while it reads both.
func (q *queue) ackedSince(from, now int64) int64 {
	from = max(from, now-ackWindow+1, 0)
	if from > now {
		return 0
	}
	for i := range q.inflight {
		q.inflight[i].mu.Lock()
	}
	n := q.acks.sum(from, now)
	for i := range q.inflight {
		sh := &q.inflight[i]
		if t := sh.acks; t.sec >= from && t.sec <= now {
			n += t.n
		}
		sh.mu.Unlock()
	}
	return n
}

// ackRing counts acks by the second over the last ackWindow seconds: the
// bucket of second s, at s % ackWindow, holds s<<32 | acks. A bucket still
// holding an older second is stale and counts nothing.
type ackRing struct {
	buckets [ackWindow]atomic.Uint64
}

// add counts n acks of second sec, unless sec is so old that its bucket
// holds a later second.
func (r *ackRing) add(sec, n int64) {
	b := &r.buckets[uint64(sec)%ackWindow]
	for {
		v := b.Load()
		next := uint64(sec)<<32 | uint64(n)
		switch cur := int64(v >> 32); {
		case cur > sec:
			return
		case cur == sec:
			next = v + uint64(n)
		}
		if b.CompareAndSwap(v, next) {
			return
		}
	}
}

// sum returns the acks of seconds from to now, which the caller bounds to
// the window.
func (r *ackRing) sum(from, now int64) int64 {
	var n int64
	for s := from; s <= now; s++ {
		if v := r.buckets[uint64(s)%ackWindow].Load(); int64(v>>32) == s {
			n += int64(v & (1<<32 - 1))
		}
	}
	return n
}
