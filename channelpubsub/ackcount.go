package channelpubsub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.AckCounter = (*subscription)(nil)

// AckedSince counts the acks of the handle's subscription at or after since
// (see admin.AckCounter). Acks are counted by the second they were made
// in, as the store's coarse clock read it (see below): no ack made at or
// after since is missed; every ack of the second since falls in is
// counted, even one made a little before since, and so are those of the
// second before when since is less than a sweep (Options.Lease/8, 250 ms
// at most) past a second boundary. A since in the future counts 0. The
// subscription remembers the acks of its last 1024 seconds (about 17
// minutes); a since older than that counts those only. A named
// subscription that does not exist wraps pubsub.ErrNoSubscription.
func (s *subscription) AckedSince(_ context.Context, since time.Time) (int64, error) {
	q, err := s.open(false)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	if since.After(now) {
		return 0, nil // not the acks of now's second
	}
	ps := q.ps
	return q.ackedSince(ps.sweeps.firstSecond(ps.onLine(since)), ps.onLine(now)/int64(time.Second)), nil
}

// ackWindow is how many seconds back a subscription counts its acks.
const ackWindow = 1024

// Acks are counted where an Ack already holds a lock: each live shard
// counts the acks of its latest second under its mu (endLease), and moves
// them into the queue's ring of per-second buckets when an ack of a later
// second comes. An Ack thus costs one atomic load, an increment, no atomic
// write on a line its subscription's other consumers write, no clock read
// and no allocation.
//
// The second an ack is filed under is that of the coarse clock (the one
// leases are measured with), which the sweeper advances each sweep: it lags the real time by up to a sweep, more
// when the sweeper runs late. Filed under the clock alone, an ack made
// just after a caller's since, a second boundary between the clock and
// since, would fall in the second before since's and never be counted. So
// the sweeper also records, per second, when its sweeps had stored their
// reading (sweepLog): an ack made at or after since read at least the
// reading of the last sweep stored before since, and AckedSince counts from
// that reading's second. Every time is on the store's line: unix
// nanoseconds of the store's making plus the monotonic time elapsed since
// (onLine), so a stepped wall clock moves nothing.

// onLine places t on the store's line.
func (ps *store) onLine(t time.Time) int64 {
	return ps.epochNano + int64(t.Sub(ps.epoch))
}

// tick advances the coarse clock to now, records the sweep and returns
// the clock's new reading. Called by the sweeper only (and by Open).
func (ps *store) tick(now time.Time) int64 {
	stamp := ps.onLine(now)
	ps.clock.Store(stamp)
	ps.sweeps.record(stamp, ps.onLine(time.Now()))
	return stamp
}

// sweepLog keeps, for each of the last ackWindow seconds, the sweeps that
// stored their clock reading (the stamp) during it: the first one's
// stamp and when it was stored, and the last one's stamp.
type sweepLog struct {
	mu    sync.Mutex
	slots [ackWindow]sweepSlot
}

type sweepSlot struct {
	sec                          int64 // the second the slot is of; another one's is stale
	firstDone, firstStamp, stamp int64
}

// record notes a sweep whose stamp was stored by done.
func (l *sweepLog) record(stamp, done int64) {
	sec := done / int64(time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := &l.slots[uint64(sec)%ackWindow]
	if sl.sec != sec {
		*sl = sweepSlot{sec: sec, firstDone: done, firstStamp: stamp}
	}
	sl.stamp = stamp
}

// firstSecond is the second from which acks made at or after since (on
// the store's line) are filed: that of the stamp of the last sweep stored
// by since, or of an earlier one. With no sweep in the window before
// since, it is the window's start.
func (l *sweepLog) firstSecond(since int64) int64 {
	sec := since / int64(time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	if sl := l.slots[uint64(sec)%ackWindow]; sl.sec == sec && sl.firstDone <= since {
		return sl.firstStamp / int64(time.Second) // no later than the last one's
	}
	for s := sec - 1; s > sec-ackWindow; s-- {
		if sl := l.slots[uint64(s)%ackWindow]; sl.sec == s {
			return sl.stamp / int64(time.Second) // every sweep of s was stored by since
		}
	}
	return sec - ackWindow + 1
}

// ackTally is the acks of one second that a shard has not yet moved into
// the ring. Guarded by the shard's mu.
type ackTally struct {
	sec, n int64
}

// countAck counts an ack of second sec (of the coarse clock) in sh. Called with sh.mu held.
func (q *queue) countAck(sh *liveShard, sec int64) {
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
	for i := range q.live {
		q.live[i].mu.Lock()
	}
	n := q.acks.sum(from, now)
	for i := range q.live {
		sh := &q.live[i]
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
