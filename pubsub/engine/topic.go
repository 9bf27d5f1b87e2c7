package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// topic is one handle on a subscription of a topic: its enqueues publish
// to the topic, its other calls act on the subscription.
type topic struct {
	ps    *PubSub
	name  string
	sub   string
	label string
	dt    driver.Topic
	ds    driver.Subscription
	h     backend.Handle
	caps  caps
	stop  atomic.Pointer[stopper] // its Receive calls' stop channel (gate.stopperFor)
	held  *atomic.Int64           // its count of deliveries in hand (gate.shard)
	// policy is the subscription's retry policy once known (retryPolicy).
	policy atomic.Pointer[pubsub.RetryPolicy]
}

var (
	_ backend.Topic       = (*topic)(nil)
	_ wrap.OwnedEnqueuer  = (*topic)(nil)
	_ wrap.EnqueueStarter = (*topic)(nil)
	_ wrap.Forwarder      = (*topic)(nil)
)

// newHandle returns a handle on subscription sub of topic name, one that
// names them with Options.Named.
func (ps *PubSub) newHandle(name, sub string) pubsub.Topic {
	dt := ps.store.Topic(name)
	ds := dt.Subscription(sub)
	var t *topic
	var h pubsub.Topic
	if ps.named {
		n := new(namedTopic)
		t, h = &n.topic, n
	} else {
		t = new(topic)
		h = t
	}
	*t = topic{ps: ps, name: name, sub: sub, label: backend.Label(name, sub), dt: dt, ds: ds, h: backend.NewHandle(), held: ps.gate.shard()}
	t.caps = findCaps(ps.features, dt, ds)
	return h
}

// namedTopic is a handle that names its topic and subscription
// (Options.Named).
type namedTopic struct{ topic }

// Name returns the topic's name.
func (t *namedTopic) Name() string { return t.name }

// Subscription returns the name of the subscription the handle reads.
func (t *namedTopic) Subscription() string { return t.sub }

// Enqueue publishes a copy of data to every subscription of the topic. It
// may block for room until ctx ends.
func (t *topic) Enqueue(ctx context.Context, data []byte) error {
	_, err := t.publish(ctx, OpEnqueue, driver.Outgoing{Data: data})
	return err
}

// EnqueueOwned is Enqueue of data handed over by the caller, who never
// writes it again (wrap.OwnedEnqueuer): the store may keep it uncopied.
func (t *topic) EnqueueOwned(ctx context.Context, data []byte) error {
	_, err := t.publish(ctx, OpEnqueue, driver.Outgoing{Data: data, Owned: true})
	return err
}

// EnqueueAt publishes a copy of data, to be delivered no earlier than at.
func (t *topic) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	if !t.ps.features.Has(driver.Delay) {
		return t.ps.unsupported("delayed enqueue")
	}
	_, err := t.publish(ctx, OpEnqueueAt, driver.Outgoing{Data: data, At: at})
	return err
}

// EnqueueUnique publishes a copy of data unless the topic keeps a message
// with key (see pubsub.UniqueEnqueuer); it reports whether it did.
func (t *topic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if !t.ps.features.Has(driver.Unique) {
		return false, t.ps.unsupported("unique enqueue")
	}
	if err := pubsub.ValidateKey(key); err != nil {
		return false, fmt.Errorf("%s: unique enqueue on topic %q: %w", t.ps.name, t.name, err)
	}
	return t.publish(ctx, OpEnqueueUnique, driver.Outgoing{Data: data, Key: key})
}

// startedKey marks the ctx of an enqueue whose observation a StartEnqueue
// of the handle (its value) started: the enqueue is observed by that one.
type startedKey struct{}

// StartEnqueue starts the Observer's observation of an enqueue of n
// messages (see wrap.EnqueueStarter): the event package calls it before
// it encodes events, so that each carries the header the Observer adds.
// Without Observer.StartEnqueue it returns ctx and an end that does
// nothing, and pubsub.As does not find it (Forwards).
func (t *topic) StartEnqueue(ctx context.Context, n int) (context.Context, func(error)) {
	start := t.ps.obs.StartEnqueue
	if start == nil {
		return ctx, endNothing
	}
	op := OpEnqueue
	if n != 1 {
		op = OpEnqueueBatch
	}
	ctx, end := start(ctx, Enqueue{Topic: t.name, Op: op, N: n, Size: -1})
	return context.WithValue(ctx, startedKey{}, t), func(err error) { end(EnqueueEnd{Err: err}) }
}

func endNothing(error) {}

// observed reports whether an enqueue with ctx is to be observed on its
// own: there is an Observer.StartEnqueue, and no StartEnqueue of t
// started the observation already.
func (t *topic) observed(ctx context.Context) bool {
	return t.ps.obs.StartEnqueue != nil && ctx.Value(startedKey{}) != t
}

// publish is send of m, observed (Observer.StartEnqueue) as op.
func (t *topic) publish(ctx context.Context, op EnqueueOp, m driver.Outgoing) (bool, error) {
	if !t.observed(ctx) {
		return t.send(ctx, m)
	}
	ctx, end := t.ps.obs.StartEnqueue(ctx, Enqueue{Topic: t.name, Op: op, N: 1, Size: len(m.Data)})
	added, err := t.send(ctx, m)
	end(EnqueueEnd{Err: err, Duplicate: err == nil && m.Key != "" && !added})
	return added, err
}

// send checks m and the handle, completes m from ctx (its header, the
// caller's transaction) and hands it to the store.
func (t *topic) send(ctx context.Context, m driver.Outgoing) (bool, error) {
	if err := t.check(); err != nil {
		return false, err
	}
	if err := checkSize(m.Data, t.ps.maxSize); err != nil {
		return false, fmt.Errorf("%s: enqueue on topic %q: %w", t.ps.name, t.name, err)
	}
	var err error
	if m.Header, m.Tx, err = t.enqueueContext(ctx); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	added, err := t.dt.Publish(ctx, t.h.Closed(), m)
	if err != nil {
		err = t.publishErr(ctx, "enqueue", err)
	}
	return added, err
}

// EnqueueBatch publishes copies of every item, in order, all or none, on
// a store with driver.BatchPublisher; pubsub.EnqueueBatch falls back to
// EnqueuePipelined, or one Enqueue per item, on another.
func (t *topic) EnqueueBatch(ctx context.Context, data [][]byte) error {
	if t.caps.batch == nil {
		return t.ps.unsupported("batch enqueue")
	}
	return t.observeBatch(ctx, data, func(ctx context.Context, b driver.Batch) error {
		if err := t.caps.batch.PublishBatch(ctx, t.h.Closed(), b); err != nil {
			return t.publishErr(ctx, "batch", err)
		}
		return nil
	})
}

// EnqueuePipelined publishes copies of every item, in order, together
// but not all or none, on a store with driver.PipelinePublisher: an item
// the store could not publish is named in a *pubsub.BatchError.
// pubsub.EnqueueBatch uses it on a store without driver.BatchPublisher.
func (t *topic) EnqueuePipelined(ctx context.Context, data [][]byte) error {
	if t.caps.pipeline == nil {
		return t.ps.unsupported("pipelined batch enqueue")
	}
	return t.observeBatch(ctx, data, func(ctx context.Context, b driver.Batch) error {
		errs, err := t.caps.pipeline.PublishPipelined(ctx, t.h.Closed(), b)
		if err != nil {
			return t.publishErr(ctx, "batch", err)
		}
		var be *pubsub.BatchError
		for i, err := range errs {
			if err == nil {
				continue
			}
			if be == nil {
				be = &pubsub.BatchError{Len: len(data)}
			}
			be.Failed = append(be.Failed, i)
			be.Errs = append(be.Errs, t.publishErr(ctx, fmt.Sprintf("batch item %d", i), err))
		}
		if be != nil {
			return be
		}
		return nil
	})
}

// observeBatch checks data and the handle, and hands the batch to publish
// (the store's), observed (Observer.StartEnqueue) as one batch enqueue.
func (t *topic) observeBatch(ctx context.Context, data [][]byte, publish func(context.Context, driver.Batch) error) error {
	send := func(ctx context.Context) error {
		if err := t.check(); err != nil {
			return err
		}
		for i, d := range data {
			if err := checkSize(d, t.ps.maxSize); err != nil {
				return fmt.Errorf("%s: batch item %d on topic %q: %w", t.ps.name, i, t.name, err)
			}
		}
		h, tx, err := t.enqueueContext(ctx)
		if err != nil {
			return err
		}
		return publish(ctx, driver.Batch{Data: data, Header: h, Tx: tx})
	}
	if !t.observed(ctx) {
		return send(ctx)
	}
	ctx, end := t.ps.obs.StartEnqueue(ctx, Enqueue{Topic: t.name, Op: OpEnqueueBatch, N: len(data), Size: -1})
	err := send(ctx)
	end(EnqueueEnd{Err: err})
	return err
}

// enqueueContext returns the header an enqueue called with ctx gives its
// messages (pubsub.WithHeader) and the caller's transaction
// (pubsub.WithTx), and fails the enqueue if that header is invalid or if
// it asks for a transaction the store cannot take part in: enqueueing
// anyway would lose the atomicity the caller asked for.
func (t *topic) enqueueContext(ctx context.Context) (pubsub.Header, any, error) {
	tx := driver.TxFrom(ctx)
	if tx != nil && !t.ps.features.Has(driver.Tx) {
		return nil, nil, fmt.Errorf("%s: enqueue on topic %q in a transaction (%T): the backend cannot take part in one: %w", t.ps.name, t.name, tx, pubsub.ErrUnsupported)
	}
	h, err := wrap.HeaderFrom(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: enqueue on topic %q: %w", t.ps.name, t.name, err)
	}
	return h, tx, nil
}

// publishErr words a store's error of the enqueue op: ctx's error as it
// is; the store's bare pubsub.ErrClosed as the handle's closed error; the
// rest with the backend's name, op and topic, keeping what the store said
// (a write that Close cut off wraps pubsub.ErrClosed and says it may have
// committed).
func (t *topic) publishErr(ctx context.Context, op string, err error) error {
	switch {
	case isCtxErr(ctx, err):
		return err
	case err == pubsub.ErrClosed:
		return t.closedErr()
	}
	return fmt.Errorf("%s: %s on topic %q: %w", t.ps.name, op, t.name, err)
}

// Dequeue blocks until a message of the handle's subscription is ready
// and the PubSub's quiesce gate is open, ctx ends, or the handle closes.
func (t *topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	g := &t.ps.gate
	for {
		if err := t.check(); err != nil {
			return nil, err
		}
		st := g.state.Load()
		if st.shut {
			if err := t.waitOpen(ctx, st); err != nil {
				return nil, err
			}
			continue
		}
		s := t.stop.Load()
		if s == nil || s.st != st {
			if s = g.stopperFor(t, st); s == nil {
				continue // the gate shut meanwhile
			}
		}
		m, err := t.receive(ctx, s.ch)
		if err != nil {
			if g.state.Load() != st && errors.Is(err, pubsub.ErrClosed) && !t.h.IsClosed() && !t.ps.closed.Load() {
				continue // stopped by the gate
			}
			return nil, t.wrap(ctx, "dequeue", err)
		}
		t.held.Add(1)
		if g.state.Load().shut {
			t.giveBack(ctx, &m.Delivery)
			t.release()
			continue
		}
		m.Owner = t
		if t.ps.obs.Delivered != nil {
			if o := t.ps.obs.Delivered(Delivery{Topic: t.name, Subscription: t.sub, Message: m}); o != nil {
				m.Hook = o
			}
		}
		return m, nil
	}
}

// receive is the store's Receive of one delivery for t, stopped by stop.
func (t *topic) receive(ctx context.Context, stop <-chan struct{}) (*message, error) {
	if t.caps.slots != nil {
		s, err := t.caps.slots.ReceiveSlot(ctx, stop)
		if err != nil {
			return nil, err
		}
		return (*message)(s), nil
	}
	m := new(message)
	if err := t.ds.Receive(ctx, stop, &m.Delivery); err != nil {
		return nil, err
	}
	return m, nil
}

// Close closes this handle; other handles on the topic, and the messages,
// are untouched. Deliveries already made can still be settled. A second
// Close returns pubsub.ErrClosed.
func (t *topic) Close() error {
	err := t.h.Close(t.closedErr())
	if s := t.stop.Load(); s != nil {
		t.ps.gate.forget(s)
	}
	return err
}

// RetryPolicy returns the retry policy of the handle's messages (see
// wrap.RetryReporter): its subscription's once known (a handle of
// Subscribe knows it; one of Topic learns it at its first Nack), the
// PubSub's until then.
func (t *topic) RetryPolicy() pubsub.RetryPolicy {
	if p := t.policy.Load(); p != nil {
		return *p
	}
	return t.ps.defaults.Retry
}

// Forwards reports the abilities the handle's store lacks: pubsub.As then
// finds none of them on it, nor on a wrapper that forwards them
// (wrap.Forwarder), while the handle's own methods return
// pubsub.ErrUnsupported. It reports wrap.EnqueueStarter too, unless
// the Observer starts enqueues.
func (t *topic) Forwards(ability any) bool {
	if _, ok := ability.(*wrap.EnqueueStarter); ok {
		return t.ps.obs.StartEnqueue == nil
	}
	return !t.caps.has(ability)
}

func (t *topic) check() error {
	if t.h.IsClosed() || t.ps.closed.Load() {
		return t.closedErr()
	}
	return nil
}

func (t *topic) closedErr() error { return backend.ClosedError(t.ps.name, t.name, t.sub) }

// wrap words a store's error of op on the handle's subscription: ctx's
// own error as it is, a store's bare pubsub.ErrClosed as the handle's
// closed error, the rest with the backend's name, op and the subscription.
func (t *topic) wrap(ctx context.Context, op string, err error) error {
	switch {
	case err == nil, isCtxErr(ctx, err):
		return err
	case err == pubsub.ErrClosed:
		return t.closedErr()
	}
	return fmt.Errorf("%s: %s on %s: %w", t.ps.name, op, t.label, err)
}

// checkSize returns an error wrapping pubsub.ErrTooLarge when data is
// longer than limit bytes.
func checkSize(data []byte, limit int) error {
	if len(data) > limit {
		return fmt.Errorf("%w: %d bytes, the limit is %d", pubsub.ErrTooLarge, len(data), limit)
	}
	return nil
}
