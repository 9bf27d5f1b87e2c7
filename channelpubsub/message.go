package channelpubsub

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
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
	q      *queue
	id     uint64
	data   []byte
	header pubsub.Header // nil if enqueued without one; never written
	key    string        // unique key, if enqueued with one

	created    int64         // when it was enqueued, by the PubSub's coarse clock
	leaseUntil atomic.Int64  // by the PubSub's coarse clock; written under mu
	leased     atomic.Uint64 // token of the delivery holding the lease, 0 if none; written under mu
	prev, next *entry        // in the queue's inflight list while leased; guarded by the shard's mu
	// rprev, rnext link it in the queue's ready set while it is ready
	// (in the channel or waiting for room); guarded by the shard's mu.
	rprev, rnext *entry

	mu      sync.Mutex
	state   state
	attempt int
	token   uint64 // which delivery holds the lease
	// cold holds what only a delayed, failed or dead message needs, made
	// when it first does (see coldPart): an entry that is acked on its
	// first delivery is smaller without it. Set under mu, never unset.
	cold *entryCold

	first message // the first delivery, allocated with the entry
}

// entryCold is the part of an entry that most messages never use.
type entryCold struct {
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

// lastErr is the reason of e's last failure, if any. Called with e.mu held,
// or on a dead entry with q.mu held (see bury).
func (e *entry) lastErr() string {
	if e.cold == nil {
		return ""
	}
	return e.cold.lastErr
}

func (e *entry) ID() string { return strconv.FormatUint(e.id, 10) }

// AppendID appends m.ID() to b (backend.IDAppender).
func (m *message) AppendID(b []byte) []byte { return strconv.AppendUint(b, m.e.id, 10) }

// deliver leases e to a consumer and returns that delivery, or nil if e
// was cancelled (Cancel) while in the channel.
func (e *entry) deliver() *message {
	e.mu.Lock()
	e.q.ready.remove(e)
	if e.state != stReady {
		e.mu.Unlock()
		return nil
	}
	e.attempt++
	e.token++
	e.state = stProcessing
	e.leaseUntil.Store(e.q.ps.leaseEnd(e.q.ps.opts.Lease))
	e.leased.Store(e.token)
	e.q.addInflight(e)
	m := &e.first
	if e.token != 1 {
		m = new(message)
	}
	*m = message{e: e, token: e.token, attempt: e.attempt}
	e.mu.Unlock()
	return m
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
	q.endLease(e, false)
	if q.ps.opts.Retry.Exhausted(e.attempt) {
		q.bury(e, backend.ReasonLeaseExpired, pubsub.LeaseExpired)
		e.mu.Unlock()
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

// message is one delivery of an entry.
type message struct {
	e       *entry
	token   uint64
	attempt int
	settled bool // guarded by e.mu
}

var (
	_ backend.Message    = (*message)(nil)
	_ backend.IDAppender = (*message)(nil)
	_ pubsub.Headerer    = (*message)(nil)
)

func (m *message) ID() string            { return m.e.ID() }
func (m *message) Data() []byte          { return m.e.data }
func (m *message) Header() pubsub.Header { return m.e.header }
func (m *message) Attempt() int          { return m.attempt }

// Ack settles the message for good.
func (m *message) Ack(context.Context) error {
	return m.settle("ack", true, func(e *entry) {
		e.state = stDone
		e.q.finishKey(e)
	})
}

// Nack gives the message back for redelivery after the retry policy's
// backoff, or makes it dead when its attempts are exhausted.
func (m *message) Nack(ctx context.Context) error { return m.Fail(ctx, nil) }

// Fail is Nack keeping reason, shown if the message ends up dead.
func (m *message) Fail(_ context.Context, reason error) error {
	return m.settle("nack", false, func(e *entry) {
		f := backend.Fail(e.q.ps.opts.Retry, e.attempt, reason)
		if f.Reason != "" {
			e.coldPart().lastErr = f.Reason
		}
		if f.Dead {
			e.q.bury(e, e.lastErr(), pubsub.AttemptsExhausted)
			return
		}
		e.q.schedule(e, f.Backoff)
	})
}

// Reject makes the message dead at once, keeping reason.
func (m *message) Reject(_ context.Context, reason error) error {
	return m.settle("reject", false, func(e *entry) {
		e.q.bury(e, backend.RejectReason(reason), pubsub.Rejected)
	})
}

// ExtendLease moves the lease deadline to now+d.
func (m *message) ExtendLease(_ context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("channelpubsub: extend lease of message %s by %v: want a positive duration", m.ID(), d)
	}
	e := m.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := m.check("extend lease"); err != nil {
		return err
	}
	e.leaseUntil.Store(e.q.ps.leaseEnd(d))
	return nil
}

// settle runs f on the entry if this delivery still holds its lease;
// acked says the settlement is an ack, counted for AckedSince.
func (m *message) settle(op string, acked bool, f func(*entry)) error {
	e := m.e
	e.mu.Lock()
	if err := m.check(op); err != nil {
		e.mu.Unlock()
		return err
	}
	m.settled = true
	e.q.endLease(e, acked)
	f(e)
	e.mu.Unlock()
	return nil
}

// check says why this delivery can no longer be settled. Called with e.mu held.
func (m *message) check(op string) error {
	var err error
	e, q := m.e, m.e.q
	switch {
	case m.settled:
		err = pubsub.ErrSettled
	case q.ps.isClosed():
		err = pubsub.ErrClosed
	case q.isGone.Load():
		err = errDeleted
	case e.token != m.token || e.state != stProcessing:
		err = pubsub.ErrLeaseExpired
	}
	if err != nil {
		return backend.MessageError("channelpubsub", op, m.ID(), m.attempt, q.topic, q.sub, err)
	}
	return nil
}

// errDeleted is why a delivery of a deleted subscription does not settle:
// its message went with the subscription.
var errDeleted = fmt.Errorf("the subscription was deleted: %w", pubsub.ErrLeaseExpired)
