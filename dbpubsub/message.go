package dbpubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// message is one delivery of a row. Its settle calls are fenced by the
// row's delivery token: they only touch the row while this delivery holds
// its lease.
type message struct {
	st *topicState
	d  *delivery

	mu    sync.Mutex
	state msgState
}

type msgState uint8

const (
	msgOpen    msgState = iota
	msgBusy             // a settle is in flight
	msgSettled          // acked, nacked, failed or rejected
	msgExpired          // the lease ran out (the database said so)
)

var (
	_ pubsub.Message       = (*message)(nil)
	_ pubsub.Attempter     = (*message)(nil)
	_ pubsub.LeaseExtender = (*message)(nil)
	_ pubsub.Failer        = (*message)(nil)
	_ pubsub.Rejecter      = (*message)(nil)
)

func (m *message) ID() string   { return strconv.FormatInt(m.d.id, 10) }
func (m *message) Data() []byte { return m.d.data }
func (m *message) Attempt() int { return m.d.attempt }

// Ack settles the message for good; it returns once that is committed, or,
// with Options.AsyncAck, once it is queued for the next grouped statement.
func (m *message) Ack(ctx context.Context) error {
	if m.st.ps.opts.AsyncAck {
		if ok, err := m.ackAsync(); ok || err != nil {
			return err
		}
	}
	return m.settle(ctx, "ack", statusFinished, 0, "")
}

// ackAsync queues the ack (Options.AsyncAck). It reports false, leaving
// the ack to the synchronous path, when the lease is in its second half
// (so that a lost lease is reported, not logged) or the queue is full.
func (m *message) ackAsync() (bool, error) {
	ps := m.st.ps
	if time.Since(m.d.leased) > ps.opts.Lease/2 {
		return false, nil
	}
	if err := m.acquire("ack"); err != nil {
		return false, err
	}
	r := &settleReq{id: m.d.id, token: m.d.token, status: statusFinished, topic: m.st.name}
	queued := ps.ackAsync(r)
	m.mu.Lock()
	if queued {
		m.state = msgSettled
	} else {
		m.state = msgOpen
	}
	m.mu.Unlock()
	return queued, nil
}

// Nack gives the message back for redelivery after the retry policy's
// backoff, or makes it dead when its attempts are exhausted.
func (m *message) Nack(ctx context.Context) error { return m.fail(ctx, "nack", nil) }

// Fail is Nack keeping reason, shown if the message ends up dead.
func (m *message) Fail(ctx context.Context, reason error) error { return m.fail(ctx, "fail", reason) }

func (m *message) fail(ctx context.Context, op string, reason error) error {
	retry := m.st.ps.opts.Retry
	msg := ""
	if reason != nil {
		msg = reason.Error()
	}
	if retry.Exhausted(m.d.attempt) {
		return m.settle(ctx, op, statusDead, 0, msg)
	}
	err := m.settle(ctx, op, statusPending, retry.Backoff(m.d.attempt), msg)
	if err == nil {
		m.st.wake() // the fetcher sleeps until the new due time
	}
	return err
}

// Reject makes the message dead at once, keeping reason.
func (m *message) Reject(ctx context.Context, reason error) error {
	msg := "rejected"
	if reason != nil {
		msg = reason.Error()
	}
	return m.settle(ctx, "reject", statusDead, 0, msg)
}

// ExtendLease moves the lease deadline to now+d (by the database's clock).
func (m *message) ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("dbpubsub: extend lease of message %s by %v: want a positive duration", m.ID(), d)
	}
	if err := m.acquire("extend lease"); err != nil {
		return err
	}
	err := m.extend(ctx, d)
	m.mu.Lock()
	m.state = msgOpen
	if errors.Is(err, pubsub.ErrLeaseExpired) {
		m.state = msgExpired
	}
	m.mu.Unlock()
	return err
}

func (m *message) extend(ctx context.Context, d time.Duration) error {
	ps := m.st.ps
	if err := ps.begin(); err != nil {
		return m.errorf("extend lease", err)
	}
	defer ps.end()
	var n int64
	err := ps.write(ctx, ps.sqldb, func(ctx context.Context, ex execer) error {
		res, err := ex.ExecContext(ctx, ps.stmts.extend, m.d.id, m.d.token, d.Microseconds())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return m.errorf("extend lease", ctxErr(ctx, err))
	}
	if n == 0 {
		return m.errorf("extend lease", pubsub.ErrLeaseExpired)
	}
	return nil
}

// acquire marks a settle or extension in flight, or says why none can be.
func (m *message) acquire(op string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.state {
	case msgSettled, msgBusy:
		return m.errorf(op, pubsub.ErrSettled)
	case msgExpired:
		return m.errorf(op, pubsub.ErrLeaseExpired)
	}
	m.state = msgBusy
	return nil
}

func (m *message) settle(ctx context.Context, op, status string, delay time.Duration, reason string) error {
	if err := m.acquire(op); err != nil {
		return err
	}
	err := m.st.ps.settle(ctx, &settleReq{
		id: m.d.id, token: m.d.token, status: status, delay: delay.Microseconds(), reason: reason,
	})
	m.mu.Lock()
	switch {
	case err == nil:
		m.state = msgSettled
	case errors.Is(err, pubsub.ErrLeaseExpired):
		m.state = msgExpired
	default:
		m.state = msgOpen // nothing was changed (or it is unknown); the caller may try again
	}
	m.mu.Unlock()
	if err != nil {
		return m.errorf(op, err)
	}
	return nil
}

func (m *message) errorf(op string, err error) error {
	return fmt.Errorf("dbpubsub: %s message %s (attempt %d) on topic %q: %w", op, m.ID(), m.d.attempt, m.st.name, err)
}
