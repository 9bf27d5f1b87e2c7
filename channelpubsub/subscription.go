package channelpubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// subscription is the consumer side of one subscription of a topic, as
// one engine handle reads it: the subscription's queue, looked up again
// once the subscription is deleted.
type subscription struct {
	ts  *topicState
	sub string
	q   atomic.Pointer[queue] // sub's queue, as last looked up; nil before
}

var (
	_ driver.Subscription = (*subscription)(nil)
	_ driver.SlotReceiver = (*subscription)(nil)
	_ driver.Releaser     = (*subscription)(nil)
	_ driver.DeadLetters  = (*subscription)(nil)
	_ driver.Stater       = (*subscription)(nil)
)

// open returns the subscription's queue. consume says the call consumes
// (Receive): that makes the default subscription one of the topic's. The
// queue is looked up again once its subscription is deleted: a deleted
// default is replaced by a new one, a deleted named subscription is
// pubsub.ErrNoSubscription until it is created again.
func (s *subscription) open(consume bool) (*queue, error) {
	q := s.q.Load()
	if q != nil && !q.isGone.Load() && (!consume || q.subscribed.Load()) {
		return q, nil
	}
	if consume && s.sub == pubsub.DefaultSubscription {
		q = s.ts.subscribe(s.sub, nil)
	} else {
		var err error
		if q, err = s.ts.lookup(s.sub); err != nil {
			return nil, err
		}
	}
	s.q.Store(q)
	return q, nil
}

// ReceiveSlot blocks until a message of the subscription is ready, ctx
// ends, or stop or the store closes. On the default subscription it makes
// the default one of the topic's subscriptions. The first delivery of a
// message is in its entry (driver.SlotReceiver).
func (s *subscription) ReceiveSlot(ctx context.Context, stop <-chan struct{}) (*driver.Slot, error) {
	for {
		q, err := s.open(true)
		if err != nil {
			return nil, err
		}
		slot, err := q.dequeue(ctx, stop)
		switch {
		case errors.Is(err, errGone):
			continue // the subscription was deleted: look it up again
		case errors.Is(err, errStopped):
			return nil, pubsub.ErrClosed
		}
		return slot, err
	}
}

// Receive is ReceiveSlot into d.
func (s *subscription) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	slot, err := s.ReceiveSlot(ctx, stop)
	if err != nil {
		return err
	}
	*d = slot.Delivery
	return nil
}

// Ack settles d's message for good.
func (s *subscription) Ack(_ context.Context, d *driver.Delivery) error {
	return settle(d, true, func(e *entry) {
		e.state = stDone
		e.q.finishKey(e)
	})
}

// Retry makes d's message ready again after delay, keeping reason.
func (s *subscription) Retry(_ context.Context, d *driver.Delivery, delay time.Duration, reason string) error {
	return settle(d, false, func(e *entry) {
		if reason != "" {
			e.coldPart().lastErr = reason
		}
		e.q.schedule(e, delay)
	})
}

// Release gives d's message back, due now, its attempt uncounted
// (driver.Releaser).
func (s *subscription) Release(_ context.Context, d *driver.Delivery) error {
	return settle(d, false, func(e *entry) {
		e.attempt--
		e.q.schedule(e, 0)
	})
}

// Dead makes d's message dead, keeping reason.
func (s *subscription) Dead(_ context.Context, d *driver.Delivery, reason string) error {
	return settle(d, false, func(e *entry) {
		if reason != "" {
			e.coldPart().lastErr = reason
		}
		e.q.bury(e, e.lastErr())
	})
}

// Extend moves d's lease deadline to now+by, by the coarse clock.
func (s *subscription) Extend(_ context.Context, d *driver.Delivery, by time.Duration) error {
	e := d.Msg.(*entry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(d.Token); err != nil {
		return err
	}
	e.leaseUntil.Store(e.q.ps.leaseEnd(by))
	return nil
}

// ListDead returns up to limit dead messages (all if limit <= 0), oldest
// death first.
func (s *subscription) ListDead(_ context.Context, limit int) ([]admin.DeadMessage, error) {
	q, err := s.open(false)
	if err != nil {
		return nil, err
	}
	return q.listDead(limit), nil
}

// RequeueDead makes the dead message id ready again with a fresh attempt count.
func (s *subscription) RequeueDead(_ context.Context, id string) error {
	q, err := s.open(false)
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return fmt.Errorf("%w (%w)", admin.ErrInvalidID, admin.ErrNotFound)
	}
	es := q.takeDead(func(e *entry) bool { return e.id == n })
	if len(es) == 0 {
		return fmt.Errorf("no dead message with that id: %w", admin.ErrNotFound)
	}
	q.requeue(es)
	return nil
}

// RequeueAllDead makes every dead message ready again.
func (s *subscription) RequeueAllDead(context.Context) (int, error) {
	q, err := s.open(false)
	if err != nil {
		return 0, err
	}
	es := q.takeDead(func(*entry) bool { return true })
	q.requeue(es)
	return len(es), nil
}

// PurgeDead forgets every dead message.
func (s *subscription) PurgeDead(context.Context) (int, error) {
	q, err := s.open(false)
	if err != nil {
		return 0, err
	}
	es := q.takeDead(func(*entry) bool { return true })
	for _, e := range es {
		q.releaseKey(e)
	}
	return len(es), nil
}

// Stats counts the subscription's messages. OldestReady is not tracked by
// this store and is always 0.
func (s *subscription) Stats(context.Context) (admin.Stats, error) {
	q, err := s.open(false)
	if err != nil {
		return admin.Stats{}, err
	}
	return q.stats(), nil
}
