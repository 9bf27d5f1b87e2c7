package channelpubsub

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

var _ pubsub.AckCounter = (*topic)(nil)

// AckedSince counts the acks of the handle's subscription at or after
// since (see pubsub.AckCounter). Acks are counted by the second, as the
// PubSub's coarse lease clock reads it (it lags the real time by at most
// one sweep, Options.Lease/8 between 5 and 250 ms): every ack of the
// second since falls in is counted, even one made a little before since.
// The subscription remembers the acks of its last 1024 seconds (about 17
// minutes); a since older than that counts those only. A named
// subscription that does not exist wraps pubsub.ErrNoSubscription.
func (t *topic) AckedSince(_ context.Context, since time.Time) (int64, error) {
	q, err := t.open(false)
	if err != nil {
		return 0, err
	}
	return q.acks.since(since.Unix(), time.Now().Unix()), nil
}

// ackWindow is how many seconds back a subscription counts its acks.
const ackWindow = 1024

// ackCount counts a subscription's acks by the second over the last
// ackWindow seconds: a ring of buckets, the bucket of second s at
// s % ackWindow holding s<<32 | acks. Counting an ack takes one atomic
// add (a compare-and-swap when its second starts a bucket again), no lock
// and no allocation: it runs on every Ack, beside consumers of the same
// subscription. A bucket still holding an older second is stale and
// counts nothing.
type ackCount struct {
	buckets [ackWindow]atomic.Uint64
}

// add counts one ack at unixNano.
func (c *ackCount) add(unixNano int64) {
	sec := uint64(unixNano / int64(time.Second))
	b := &c.buckets[sec%ackWindow]
	for {
		v := b.Load()
		if v>>32 == sec {
			// The bucket is this second's, and stays so for ackWindow
			// seconds: adding cannot land in another second.
			b.Add(1)
			return
		}
		if b.CompareAndSwap(v, sec<<32|1) {
			return
		}
	}
}

// since sums the acks from second from to second now (unix seconds), as
// far back as the ring remembers.
func (c *ackCount) since(from, now int64) int64 {
	from = max(from, now-ackWindow+1, 0)
	var n int64
	for s := from; s <= now; s++ {
		if v := c.buckets[uint64(s)%ackWindow].Load(); v>>32 == uint64(s) {
			n += int64(v & (1<<32 - 1))
		}
	}
	return n
}
