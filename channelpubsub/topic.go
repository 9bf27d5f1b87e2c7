package channelpubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// topic is one handle on a subscription of a topic: its enqueues publish
// to the topic, its other calls act on the subscription.
type topic struct {
	ts    *topicState
	sub   string
	label string
	q     atomic.Pointer[queue] // sub's queue, as last looked up
	h     backend.Handle
}

var (
	_ backend.Topic         = (*topic)(nil)
	_ backend.OwnedEnqueuer = (*topic)(nil)
)

// Enqueue publishes a copy of data to every subscription of the topic (see
// the package documentation). While a subscription is full it blocks until
// there is room or ctx ends.
func (t *topic) Enqueue(ctx context.Context, data []byte) error {
	_, err := t.publish(ctx, data, false, time.Time{}, "")
	return err
}

// EnqueueOwned is Enqueue of data handed over by the caller, who never
// writes it again: a topic with one subscription keeps data itself instead
// of a copy (see backend.OwnedEnqueuer).
func (t *topic) EnqueueOwned(ctx context.Context, data []byte) error {
	_, err := t.publish(ctx, data, true, time.Time{}, "")
	return err
}

// EnqueueAt publishes a copy of data, to be delivered no earlier than at.
func (t *topic) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	_, err := t.publish(ctx, data, false, at, "")
	return err
}

// EnqueueBatch publishes copies of every item, in order, all or none, to
// every subscription: the items are checked, then the batch waits
// (honouring ctx) for each subscription's batch slot, then goes in whole.
// Items that do not fit in a subscription's channel wait for room in a
// goroutine the PubSub owns, in order; one such batch at a time per
// subscription, so a producer still feels backpressure.
func (t *topic) EnqueueBatch(ctx context.Context, data [][]byte) error {
	if err := t.check(); err != nil {
		return err
	}
	ts := t.ts
	for i, d := range data {
		if err := pubsub.CheckSize(d, ts.ps.opts.MaxDataSize); err != nil {
			return fmt.Errorf("channelpubsub: batch item %d on topic %q: %w", i, ts.name, err)
		}
	}
	h, err := ts.enqueueContext(ctx)
	if err != nil {
		return err
	}
	qs := *ts.targets.Load()
	es := make([][]*entry, len(qs))
	for i, q := range qs {
		es[i] = make([]*entry, len(data))
		for j, d := range data {
			es[i][j] = q.newEntry(d, h)
		}
	}
	err = t.pushEach(ctx, qs, es)
	if err != nil && !errors.Is(err, pubsub.ErrClosed) {
		return fmt.Errorf("channelpubsub: batch on topic %q: nothing enqueued: %w", ts.name, err)
	}
	return err
}

// EnqueueUnique publishes a copy of data to every subscription that keeps
// no message enqueued under key and not yet acked (ready, scheduled,
// processing, dead, or acked within Options.Retention); it reports whether
// a subscription got one. The key is freed in a subscription when its
// message there is purged, or Options.Retention after its ack.
func (t *topic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if err := pubsub.ValidateKey(key); err != nil {
		return false, fmt.Errorf("channelpubsub: unique enqueue on topic %q: %w", t.ts.name, err)
	}
	return t.publish(ctx, data, false, time.Time{}, key)
}

// publish adds a copy of data, with the header ctx asks for
// (pubsub.WithHeader), ready at at (zero: now), to every queue the topic
// publishes to now; under a non-empty key, only to those keeping no
// message with key. It reports whether a copy was added. owned says that
// the caller hands data over: a single queue keeps it, uncopied.
func (t *topic) publish(ctx context.Context, data []byte, owned bool, at time.Time, key string) (bool, error) {
	if err := t.check(); err != nil {
		return false, err
	}
	ts := t.ts
	if err := pubsub.CheckSize(data, ts.ps.opts.MaxDataSize); err != nil {
		return false, fmt.Errorf("channelpubsub: enqueue on topic %q: %w", ts.name, err)
	}
	h, err := ts.enqueueContext(ctx)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	qs := *ts.targets.Load()
	if len(qs) == 1 {
		switch err := qs[0].enqueue(ctx, data, h, owned, at, key, t.h.Closed()); {
		case errors.Is(err, errDuplicate):
			return false, nil
		case errors.Is(err, errStopped):
			return false, t.closedErr()
		case err != nil:
			return false, err
		}
		return true, nil
	}
	var to []*queue
	var es [][]*entry
	for _, q := range qs {
		e := q.newEntry(data, h)
		if key != "" && !q.claimKey(key, e) {
			continue
		}
		to, es = append(to, q), append(es, []*entry{e})
	}
	if len(to) == 0 {
		return false, nil
	}
	if delay := time.Until(at); !at.IsZero() && delay > 0 {
		for i, q := range to {
			e := es[i][0]
			e.mu.Lock()
			q.schedule(e, delay)
			e.mu.Unlock()
		}
		return true, nil
	}
	if err := t.pushEach(ctx, to, es); err != nil {
		for i, q := range to {
			q.releaseKey(es[i][0])
		}
		return false, err
	}
	return true, nil
}

// pushEach makes the entries es[i], in order, ready in qs[i], for every i
// or for none: it takes each queue's batch slot (honouring ctx), in the
// order of qs, which every publish takes in name order, then pushes them
// all. The entries that do not fit wait for room in goroutines the PubSub
// owns, holding the slots (see queue.pushAll). A queue whose subscription
// is deleted meanwhile is skipped: its copies would go with it.
func (t *topic) pushEach(ctx context.Context, qs []*queue, es [][]*entry) error {
	held := make([]bool, len(qs))
	fail := func(err error) error {
		for i, q := range qs {
			if held[i] {
				<-q.batchSlot
			}
		}
		return err
	}
	for i, q := range qs {
		select {
		case q.batchSlot <- struct{}{}:
			held[i] = true
		case <-q.gone:
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-t.h.Closed():
			return fail(t.closedErr())
		case <-t.ts.ps.closed:
			return fail(t.closedErr())
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	for i, q := range qs {
		if held[i] {
			q.pushAll(es[i])
		}
	}
	return nil
}

// Dequeue blocks until a message of the handle's subscription is ready,
// ctx ends, or the handle closes. On the default subscription it makes the
// default one of the topic's subscriptions.
func (t *topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	for {
		q, err := t.open(true)
		if err != nil {
			return nil, err
		}
		m, err := q.dequeue(ctx, t.h.Closed())
		switch {
		case errors.Is(err, errGone):
			continue // the subscription was deleted: look it up again
		case errors.Is(err, errStopped):
			return nil, t.closedErr()
		}
		return m, err
	}
}

// Close closes this handle; other handles on the topic, and the messages,
// are untouched. Deliveries already made can still be settled. A second
// Close returns pubsub.ErrClosed.
func (t *topic) Close() error {
	return t.h.Close(t.closedErr())
}

// ListDead returns up to limit dead messages (all if limit <= 0), oldest
// death first.
func (t *topic) ListDead(_ context.Context, limit int) ([]pubsub.DeadMessage, error) {
	q, err := t.open(false)
	if err != nil {
		return nil, err
	}
	return q.listDead(limit), nil
}

// RequeueDead makes the dead message id ready again with a fresh attempt count.
func (t *topic) RequeueDead(_ context.Context, id string) error {
	q, err := t.open(false)
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return fmt.Errorf("channelpubsub: requeue %q on %s: %w (%w)", id, t.label, pubsub.ErrInvalidID, pubsub.ErrNotFound)
	}
	es := q.takeDead(func(e *entry) bool { return e.id == n })
	if len(es) == 0 {
		return fmt.Errorf("channelpubsub: requeue %q on %s: no dead message with that id: %w", id, t.label, pubsub.ErrNotFound)
	}
	q.requeue(es)
	return nil
}

// RequeueAllDead makes every dead message ready again.
func (t *topic) RequeueAllDead(context.Context) (int, error) {
	q, err := t.open(false)
	if err != nil {
		return 0, err
	}
	es := q.takeDead(func(*entry) bool { return true })
	q.requeue(es)
	return len(es), nil
}

// PurgeDead forgets every dead message.
func (t *topic) PurgeDead(context.Context) (int, error) {
	q, err := t.open(false)
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
// this backend and is always 0.
func (t *topic) Stats(context.Context) (pubsub.Stats, error) {
	q, err := t.open(false)
	if err != nil {
		return pubsub.Stats{}, err
	}
	return q.stats(), nil
}

// open checks the handle and returns its subscription's queue. consume
// says the call consumes (Dequeue): that makes the default subscription
// one of the topic's. The queue is looked up again once its subscription
// is deleted: a deleted default is replaced by a new one, a deleted named
// subscription is ErrNoSubscription until it is created again.
func (t *topic) open(consume bool) (*queue, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	q := t.q.Load()
	if !q.isGone.Load() && (!consume || q.subscribed.Load()) {
		return q, nil
	}
	if consume && t.sub == pubsub.DefaultSubscription {
		q = t.ts.subscribe(t.sub)
	} else {
		var err error
		if q, err = t.ts.lookup(t.sub); err != nil {
			return nil, err
		}
	}
	t.q.Store(q)
	return q, nil
}

func (t *topic) check() error {
	if t.h.IsClosed() || t.ts.ps.isClosed() {
		return t.closedErr()
	}
	return nil
}

func (t *topic) closedErr() error {
	return backend.ClosedError("channelpubsub", t.ts.name, t.sub)
}

// RetryPolicy returns the retry policy of the topic's messages (see
// pubsub.RetryReporter).
func (t *topic) RetryPolicy() pubsub.RetryPolicy { return t.ts.ps.opts.Retry }
