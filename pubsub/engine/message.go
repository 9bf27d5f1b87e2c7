package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// message is one delivery, as the engine hands it out: the store's
// delivery, by value, its handle (Owner, a *topic) and the state that
// makes it settle once (State, a msgState). It is a driver.Slot, so that a
// store may keep it (driver.SlotReceiver).
type message driver.Slot

// handle returns the handle that made the delivery.
func (m *message) handle() *topic { return m.Owner.(*topic) }

// release uncounts a delivery of t's from the deliveries in hand.
func (t *topic) release() { t.ps.gate.release(t.held) }

// msgState is where a delivery is in its life, as the engine sees it.
type msgState = uint32

const (
	msgOpen    msgState = iota // leased, not settled
	msgBusy                    // a settle or an extension is in flight
	msgSettled                 // acked, retried or made dead
	msgLost                    // the store said its lease was lost
)

var (
	_ backend.Message     = (*message)(nil)
	_ wrap.IDAppender     = (*message)(nil)
	_ pubsub.Headerer     = (*message)(nil)
	_ wrap.ContextCarrier = (*message)(nil)
	_ wrap.Forwarder      = (*message)(nil)
)

func (m *message) ID() string            { return m.Delivery.Msg.ID() }
func (m *message) Data() []byte          { return m.Delivery.Data }
func (m *message) Header() pubsub.Header { return m.Delivery.Header }
func (m *message) Attempt() int          { return m.Delivery.Attempt }

// AppendID appends m.ID() to b (wrap.IDAppender).
func (m *message) AppendID(b []byte) []byte {
	if a, ok := m.Delivery.Msg.(driver.IDAppender); ok {
		return a.AppendID(b)
	}
	return append(b, m.Delivery.Msg.ID()...)
}

// Context returns ctx carrying the delivery's handling context, as its
// Observation says (see wrap.ContextCarrier); without one, ctx.
func (m *message) Context(ctx context.Context) context.Context {
	if o, ok := m.Hook.(Observation); ok {
		return o.Context(ctx)
	}
	return ctx
}

// Forwards reports wrap.ContextCarrier when the delivery has no
// Observation: pubsub.As then does not find it, and
// pubsub.HandlingContext costs nothing.
func (m *message) Forwards(ability any) bool {
	_, ok := ability.(*wrap.ContextCarrier)
	return ok && m.Hook == nil
}

// Ack settles the message for good.
func (m *message) Ack(ctx context.Context) error {
	t := m.handle()
	if t.ps.closed.Load() || !m.State.CompareAndSwap(msgOpen, msgBusy) {
		if err := m.begin("ack"); err != nil {
			return err
		}
	}
	err := t.ds.Ack(ctx, &m.Delivery)
	if err == nil && m.Hook == nil {
		m.State.Store(msgSettled)
		t.release()
		return nil
	}
	return m.end(ctx, Settle{Op: "ack", Outcome: Acked}, err)
}

// Nack gives the message back for redelivery after the retry policy's
// backoff, or makes it dead when its attempts are exhausted.
func (m *message) Nack(ctx context.Context) error { return m.Fail(ctx, nil) }

// Fail is Nack keeping reason, shown if the message ends up dead.
func (m *message) Fail(ctx context.Context, reason error) error {
	if err := m.begin("nack"); err != nil {
		return err
	}
	p, err := m.handle().retryPolicy(ctx)
	if err != nil {
		return m.end(ctx, Settle{Op: "nack", Outcome: Retried, Reason: reason}, err)
	}
	f := backend.Fail(p, m.Delivery.Attempt, reason)
	if f.Dead {
		err := m.handle().ds.Dead(ctx, &m.Delivery, f.Reason)
		if err == nil {
			m.reportDead(pubsub.AttemptsExhausted, f.Reason)
		}
		return m.end(ctx, Settle{Op: "nack", Outcome: Dead, Reason: reason}, err)
	}
	return m.end(ctx, Settle{Op: "nack", Outcome: Retried, Reason: reason}, m.handle().ds.Retry(ctx, &m.Delivery, f.Backoff, f.Reason))
}

// Reject makes the message dead at once, keeping reason.
func (m *message) Reject(ctx context.Context, reason error) error {
	if err := m.begin("reject"); err != nil {
		return err
	}
	r := backend.RejectReason(reason)
	err := m.handle().ds.Dead(ctx, &m.Delivery, r)
	if err == nil {
		m.reportDead(pubsub.Rejected, r)
	}
	return m.end(ctx, Settle{Op: "reject", Outcome: Dead, Reason: reason}, err)
}

// ExtendLease moves the lease deadline to now+d.
func (m *message) ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s: extend lease of message %s by %v: want a positive duration", m.handle().ps.name, m.ID(), d)
	}
	if err := m.begin("extend lease"); err != nil {
		return err
	}
	err := m.handle().ds.Extend(ctx, &m.Delivery, d)
	if err == nil {
		m.handle().ps.gate.extended(time.Now().Add(d))
	}
	return m.end(ctx, Settle{Op: "extend lease"}, err)
}

// begin marks a settle or an extension op in flight, or says why none can
// be: the delivery was settled (or one is in flight), its lease was lost,
// or the PubSub is closed.
func (m *message) begin(op string) error {
	for {
		switch s := m.State.Load(); s {
		case msgSettled, msgBusy:
			return m.errorf(op, pubsub.ErrSettled)
		case msgLost:
			return m.errorf(op, pubsub.ErrLeaseExpired)
		}
		if m.handle().ps.closed.Load() {
			return m.errorf(op, pubsub.ErrClosed)
		}
		if m.State.CompareAndSwap(msgOpen, msgBusy) {
			return nil
		}
	}
}

// end records the outcome of the store's op s: settled (when s has an
// outcome) or open again after a success, lost after an error wrapping
// driver.ErrLeaseLost, open after any other (nothing was changed, or it
// is unknown: the caller may try again). The delivery's Observation hears
// of it.
func (m *message) end(ctx context.Context, s Settle, err error) error {
	switch {
	case err == nil && s.Outcome != NotSettled:
		m.State.Store(msgSettled)
		m.handle().release()
	case err == nil:
		m.State.Store(msgOpen)
	case errors.Is(err, driver.ErrLeaseLost):
		m.State.Store(msgLost)
		m.handle().release()
	default:
		m.State.Store(msgOpen)
	}
	err = m.settleErr(ctx, s.Op, err)
	if o, ok := m.Hook.(Observation); ok {
		s.Err = err
		o.Settled(s)
	}
	return err
}

// settleErr words the store's error of op.
func (m *message) settleErr(ctx context.Context, op string, err error) error {
	if err == nil || isCtxErr(ctx, err) {
		return err
	}
	if errors.Is(err, pubsub.ErrClosed) {
		err = pubsub.ErrClosed
	}
	return m.errorf(op, err)
}

func (m *message) errorf(op string, err error) error {
	return backend.MessageError(m.handle().ps.name, op, m.ID(), m.Delivery.Attempt, m.handle().name, m.handle().sub, err)
}

// reportDead raises the message's death on the failure hook.
func (m *message) reportDead(cause pubsub.DeadCause, reason string) {
	f := pubsub.Failure{Kind: pubsub.Dead, Cause: cause, Topic: m.handle().name, Subscription: m.handle().sub,
		MessageID: m.ID(), Attempt: m.Delivery.Attempt, Time: time.Now()}
	if reason != "" {
		f.Err = errors.New(reason)
	}
	m.handle().ps.report(f)
}
