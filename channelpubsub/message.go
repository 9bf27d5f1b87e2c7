package channelpubsub

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

type state uint8

const (
	stReady state = iota
	stScheduled
	stProcessing
	stDone
	stDead
	stCanceled // deleted by Cancel; skipped if it is still in the channel
)

// entry is a message as the queue keeps it, across all its deliveries.
type entry struct {
	q  *queue
	id uint64

	created    int64         // when it was enqueued, by the PubSub's coarse clock
	leaseUntil atomic.Int64  // by the PubSub's coarse clock; written under mu
	leased     atomic.Uint64 // token of the delivery holding the lease, 0 if none; written under mu
	prev, next *entry        // in the queue's live shard while ready or leased; guarded by the shard's mu

	mu      sync.Mutex
	state   state
	attempt int32
	token   uint64 // which delivery holds the lease
	// cold holds what only a delayed, failed or dead message needs, made
	// when it first does (see coldPart): an entry that is acked on its
	// first delivery is smaller without it. Set under mu, never unset.
	cold *entryCold

	// first is the first delivery, allocated with the entry. Its
	// Delivery.Data and Delivery.Header, set when the entry is made and
	// never written again, are the message's (see data and header).
	first driver.Slot
}

// data is the message's payload.
func (e *entry) data() []byte { return e.first.Delivery.Data }

// header is the message's header, nil if it has none; never written.
func (e *entry) header() pubsub.Header { return e.first.Delivery.Header }

// entryCold is the part of an entry that most messages never use.
type entryCold struct {
	// key is the unique key, if enqueued with one: set before the entry
	// is shared (claimKey), never written again.
	key     string
	timer   *time.Timer // the wait while scheduled
	due     time.Time   // when it is due, while scheduled
	lastErr string
	diedAt  time.Time
}

// coldPart returns e.cold, made if need be. Called with e.mu held.
func (e *entry) coldPart() *entryCold {
	if e.cold == nil {
		e.cold = new(entryCold)
	}
	return e.cold
}

// key is e's unique key, "" if it has none. Called with e.mu or q.mu held
// (an entry that has a key has its cold part from before it was shared).
func (e *entry) key() string {
	if e.cold == nil {
		return ""
	}
	return e.cold.key
}

// lastErr is the reason of e's last failure, if any. Called with e.mu held,
// or on a dead entry with q.mu held (see bury).
func (e *entry) lastErr() string {
	if e.cold == nil {
		return ""
	}
	return e.cold.lastErr
}

// ID is the message's ID (driver.Ref).
func (e *entry) ID() string { return strconv.FormatUint(e.id, 10) }

// AppendID appends e.ID() to b (driver.IDAppender).
func (e *entry) AppendID(b []byte) []byte { return strconv.AppendUint(b, e.id, 10) }

// deliver leases e to a consumer and returns that delivery, or nil if e
// was cancelled (Cancel) while in the channel.
func (e *entry) deliver() *driver.Slot {
	e.mu.Lock()
	if e.state != stReady {
		e.mu.Unlock()
		return nil
	}
	e.attempt++
	e.token++
	e.state = stProcessing
	e.leaseUntil.Store(e.q.ps.leaseEnd(e.q.ps.opts.Lease))
	e.leased.Store(e.token)
	e.q.countLeased(e)
	s := &e.first // made with its Data and Header
	if e.token != 1 {
		s = new(driver.Slot)
		s.Delivery.Data, s.Delivery.Header = e.data(), e.header()
	}
	s.Delivery.Msg, s.Delivery.Token, s.Delivery.Attempt = e, e.token, int(e.attempt)
	e.mu.Unlock()
	return s
}

// fire runs when e's timer goes off: a scheduled message becomes ready.
func (e *entry) fire() {
	q := e.q
	if q.ps.isClosed() || q.isGone.Load() {
		return
	}
	e.mu.Lock()
	if e.state != stScheduled {
		e.mu.Unlock()
		return
	}
	q.mu.Lock()
	delete(q.scheduled, e)
	q.mu.Unlock()
	e.state = stReady
	e.mu.Unlock()
	q.push(e)
}

// expire ends the delivery token if its lease ran out before now: the
// message goes to another consumer, or is dead when its attempts are
// exhausted.
func (e *entry) expire(token uint64, now int64) {
	q := e.q
	e.mu.Lock()
	if e.state != stProcessing || e.token != token || e.leaseUntil.Load() >= now {
		e.mu.Unlock() // settled or extended meanwhile
		return
	}
	exhausted := q.retryPolicy().Exhausted(int(e.attempt))
	q.endLease(e, false, !exhausted)
	if exhausted {
		q.bury(e, driver.ReasonLeaseExpired)
		f := pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: q.topic, Subscription: q.sub,
			MessageID: e.ID(), Attempt: int(e.attempt), Err: errLeaseExpired, Time: e.cold.diedAt}
		e.mu.Unlock()
		q.ps.env.Report(f)
		return
	}
	e.state = stReady
	e.mu.Unlock()
	q.push(e)
}

func (e *entry) stopTimer() {
	e.mu.Lock()
	if e.cold != nil && e.cold.timer != nil {
		e.cold.timer.Stop()
	}
	e.mu.Unlock()
}

// settle runs f on the entry of d if d still holds its lease; acked says
// the settlement is an ack, counted for AckedSince.
func settle(d *driver.Delivery, acked bool, f func(*entry)) error {
	e := d.Msg.(*entry)
	e.mu.Lock()
	if err := e.check(d.Token); err != nil {
		e.mu.Unlock()
		return err
	}
	e.q.endLease(e, acked, false)
	f(e)
	e.mu.Unlock()
	return nil
}

// check says why the delivery token can no longer settle or extend e.
// Called with e.mu held.
func (e *entry) check(token uint64) error {
	q := e.q
	switch {
	case q.ps.isClosed():
		return pubsub.ErrClosed
	case q.isGone.Load():
		return errDeleted
	case e.token != token || e.state != stProcessing:
		return driver.ErrLeaseLost
	}
	return nil
}

// errDeleted is why a delivery of a deleted subscription does not settle:
// its message went with the subscription.
var errDeleted = fmt.Errorf("the subscription was deleted: %w", driver.ErrLeaseLost)

// errLeaseExpired is the reason of a message dead because the lease of its
// last attempt ran out.
var errLeaseExpired = errors.New(driver.ReasonLeaseExpired)
