package dbpubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Topic is a handle on one topic of a PubSub. Besides pubsub.Topic it has
// every optional ability of package pubsub; every enqueue runs in the
// caller's transaction when ctx carries one (WithTx). Its enqueues are in
// enqueue.go, its dead letters and stats in admin.go.
type Topic struct {
	st  *topicState // the subscription's queue, read by Dequeue, DeadLetters and Stats
	pub *topicState // the topic's default subscription, which routes its publishes
	h   backend.Handle
	enq enqGroup // enqueues sharing statements (enqueue.go)
}

var _ backend.Topic = (*Topic)(nil)

// Name returns the topic's name.
func (t *Topic) Name() string { return t.st.topic }

// Subscription returns the name of the subscription the handle reads.
func (t *Topic) Subscription() string { return t.st.sub }

// Dequeue blocks until a message is ready, ctx ends, or the topic closes.
// While the database cannot be reached it keeps trying, logging the
// errors, until ctx ends. A schema that is not migrated is an error at
// once.
func (t *Topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := t.st
	if err := st.consume(ctx); err != nil {
		if errors.Is(err, pubsub.ErrNoSubscription) {
			return nil, err
		}
		if errors.Is(err, migrations.ErrNotMigrated) {
			return nil, fmt.Errorf("dbpubsub: dequeue on %s: %w", st.label(), err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		// The database is unreachable: the fetcher keeps trying.
	}
	st.start()
	for {
		d, w := st.take()
		if w != nil {
			st.poke()
			select {
			case d = <-w.ch:
			case <-ctx.Done():
				st.leave(w)
				return nil, ctx.Err()
			case <-t.h.Closed():
				st.leave(w)
				return nil, st.closedErr()
			case <-st.ps.done():
				st.leave(w)
				return nil, st.closedErr()
			}
		}
		if d == goneDelivery {
			return nil, st.noSubscription()
		}
		if m := st.handOut(ctx, d); m != nil {
			return m, nil
		}
	}
}

// Close closes this handle; other handles on the topic, the messages, and
// the deliveries already made are untouched. A second Close returns
// pubsub.ErrClosed.
func (t *Topic) Close() error { return t.h.Close(t.st.closedErr()) }

// check says why the handle cannot be used, if it cannot.
func (t *Topic) check() error {
	if t.h.IsClosed() || t.st.ps.closing() {
		return t.st.closedErr()
	}
	return nil
}

// RetryPolicy returns the retry policy of the topic's messages (see
// pubsub.RetryReporter).
func (t *Topic) RetryPolicy() pubsub.RetryPolicy { return t.st.ps.opts.Retry }
