package channelpubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// topic is one handle on a queue.
type topic struct {
	q *queue
	h backend.Handle
}

var _ backend.Topic = (*topic)(nil)

// Enqueue adds a copy of data. On a full topic it blocks until there is
// room or ctx ends.
func (t *topic) Enqueue(ctx context.Context, data []byte) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.q.enqueue(ctx, data, time.Time{}, "", t.h.Closed())
}

// EnqueueAt adds a copy of data, to be delivered no earlier than at.
func (t *topic) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	if err := t.check(); err != nil {
		return err
	}
	return t.q.enqueue(ctx, data, at, "", t.h.Closed())
}

// EnqueueBatch enqueues copies of every item, in order, all or none: the
// items are checked, then the batch waits (honouring ctx) for the topic's
// batch slot, then goes in whole. Items that do not fit in the channel
// wait for room in a goroutine the PubSub owns, in order; one such batch at
// a time per topic, so a producer still feels backpressure.
func (t *topic) EnqueueBatch(ctx context.Context, data [][]byte) error {
	if err := t.check(); err != nil {
		return err
	}
	q := t.q
	for i, d := range data {
		if err := pubsub.CheckSize(d, q.ps.opts.MaxDataSize); err != nil {
			return fmt.Errorf("channelpubsub: batch item %d on topic %q: %w", i, q.name, err)
		}
	}
	if err := q.refuseTx(ctx); err != nil {
		return err
	}
	select {
	case q.batchSlot <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("channelpubsub: batch on topic %q: nothing enqueued: %w", q.name, ctx.Err())
	case <-t.h.Closed():
		return q.closedErr()
	case <-q.ps.closed:
		return q.closedErr()
	}
	if err := ctx.Err(); err != nil {
		<-q.batchSlot
		return fmt.Errorf("channelpubsub: batch on topic %q: nothing enqueued: %w", q.name, err)
	}
	es := make([]*entry, len(data))
	for i, d := range data {
		es[i] = q.newEntry(d)
	}
	q.pushAll(es) // releases the slot
	return nil
}

// EnqueueUnique adds a copy of data unless the topic keeps a message
// enqueued under key that is not yet acked (ready, scheduled, processing or
// dead); it reports whether data was added. The key is freed when its
// message is acked or purged.
func (t *topic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if err := t.check(); err != nil {
		return false, err
	}
	if key == "" {
		return false, fmt.Errorf("channelpubsub: unique enqueue on topic %q: empty key", t.q.name)
	}
	err := t.q.enqueue(ctx, data, time.Time{}, key, t.h.Closed())
	if errors.Is(err, errDuplicate) {
		return false, nil
	}
	return err == nil, err
}

// Dequeue blocks until a message is ready, ctx ends, or the topic closes.
func (t *topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.q.dequeue(ctx, t.h.Closed())
}

// Close closes this handle; other handles on the topic, and the messages,
// are untouched. Deliveries already made can still be settled. A second
// Close returns pubsub.ErrClosed.
func (t *topic) Close() error {
	return t.h.Close(t.q.closedErr())
}

// ListDead returns up to limit dead messages (all if limit <= 0), oldest
// death first.
func (t *topic) ListDead(_ context.Context, limit int) ([]pubsub.DeadMessage, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.q.listDead(limit), nil
}

// RequeueDead makes the dead message id ready again with a fresh attempt count.
func (t *topic) RequeueDead(_ context.Context, id string) error {
	if err := t.check(); err != nil {
		return err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return fmt.Errorf("channelpubsub: requeue %q on topic %q: %w", id, t.q.name, pubsub.ErrNotFound)
	}
	es := t.q.takeDead(func(e *entry) bool { return e.id == n })
	if len(es) == 0 {
		return fmt.Errorf("channelpubsub: requeue %q on topic %q: no dead message with that id: %w", id, t.q.name, pubsub.ErrNotFound)
	}
	t.q.requeue(es)
	return nil
}

// RequeueAllDead makes every dead message ready again.
func (t *topic) RequeueAllDead(context.Context) (int, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	es := t.q.takeDead(func(*entry) bool { return true })
	t.q.requeue(es)
	return len(es), nil
}

// PurgeDead forgets every dead message.
func (t *topic) PurgeDead(context.Context) (int, error) {
	if err := t.check(); err != nil {
		return 0, err
	}
	es := t.q.takeDead(func(*entry) bool { return true })
	for _, e := range es {
		t.q.releaseKey(e)
	}
	return len(es), nil
}

// Stats counts the topic's messages. OldestReady is not tracked by this
// backend and is always 0.
func (t *topic) Stats(context.Context) (pubsub.Stats, error) {
	if err := t.check(); err != nil {
		return pubsub.Stats{}, err
	}
	return t.q.stats(), nil
}

func (t *topic) check() error {
	if t.h.IsClosed() || t.q.ps.isClosed() {
		return t.q.closedErr()
	}
	return nil
}
