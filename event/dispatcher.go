package event

import (
	"context"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Dispatcher sends events to one topic. Get one injected by topic name
// (see Register):
//
//	type Checkout struct {
//		Events event.Dispatcher `inject:"orders"`
//	}
//
// or make one with NewDispatcher. Every method encodes its events (see
// Encode) and enqueues them on the topic; ctx is passed to the backend
// unchanged, so a backend that enqueues in a transaction carried by ctx does
// so for events too. Implementations are safe for concurrent use.
type Dispatcher interface {
	// Dispatch enqueues e, to be delivered at once.
	Dispatch(ctx context.Context, e Event, opts ...Option) error
	// DispatchAt enqueues e, to be delivered no earlier than at. It needs
	// a topic that can delay (pubsub.Delayer) and wraps
	// pubsub.ErrUnsupported otherwise.
	DispatchAt(ctx context.Context, e Event, at time.Time, opts ...Option) error
	// DispatchBatch enqueues every event, each with its own id, as
	// pubsub.EnqueueBatch does: in one call, all or none, when the topic
	// can (pubsub.BatchEnqueuer); together but each on its own
	// (pubsub.PipelinedEnqueuer, a *pubsub.BatchError naming those not
	// enqueued); else one by one, stopping at the first error.
	// Nothing is enqueued when an event does not encode.
	DispatchBatch(ctx context.Context, events ...Event) error
	// DispatchUnique enqueues e unless the topic keeps a message with key
	// already, and reports whether it did. It needs a topic that can
	// (pubsub.UniqueEnqueuer) and wraps pubsub.ErrUnsupported otherwise.
	DispatchUnique(ctx context.Context, key string, e Event, opts ...Option) (bool, error)
}

// DispatcherOptions configures a Dispatcher. The zero value means the
// defaults.
type DispatcherOptions struct {
	// Source is the CloudEvents source of the events dispatched (unless
	// the WithSource option says otherwise). "" means DefaultSource.
	Source string
}

// NewDispatcher returns a Dispatcher on topic. It does not own topic:
// closing the topic is the caller's business.
func NewDispatcher(topic pubsub.Topic, opts DispatcherOptions) Dispatcher {
	if opts.Source == "" {
		opts.Source = DefaultSource
	}
	d := &dispatcher{topic: topic, source: opts.Source, validSource: checkURIRef(opts.Source) == nil}
	d.starter, _ = pubsub.As[wrap.EnqueueStarter](topic)
	d.owned, _ = wrap.FindSpeedup[wrap.OwnedEnqueuer](topic)
	return d
}

type dispatcher struct {
	topic       pubsub.Topic
	source      string
	validSource bool                // source is a URI-reference, checked once
	starter     wrap.EnqueueStarter // a tracing wrapper's, or nil
	owned       wrap.OwnedEnqueuer  // the topic's copy-free enqueue, or nil
}

// start starts the topic's work for an enqueue of n events (a tracing
// wrapper's publish span), if it has any (wrap.StartEnqueue).
func (d *dispatcher) start(ctx context.Context, n int) (context.Context, func(error)) {
	if d.starter == nil {
		return ctx, func(error) {}
	}
	return d.starter.StartEnqueue(ctx, n)
}

var _ Dispatcher = (*dispatcher)(nil)

// encode encodes e, with the entries of ctx's header (pubsub.WithHeader)
// whose keys can name a CloudEvents extension as extensions (traceparent,
// tracestate): the header the backend carries beside the event is in the
// event too, for the readers of its wire form.
func (d *dispatcher) encode(ctx context.Context, e Event, opts []Option) ([]byte, error) {
	h, err := wrap.HeaderFrom(ctx)
	if err != nil {
		return nil, fmt.Errorf("event: dispatch: %w", err)
	}
	if len(h) > 0 {
		opts = append([]Option{withHeader(h)}, opts...)
	}
	if !d.validSource {
		// Each event fails as WithSource(d.source) makes it fail.
		return Encode(e, append([]Option{WithSource(d.source)}, opts...)...)
	}
	return encode(e, d.source, opts)
}

func (d *dispatcher) Dispatch(ctx context.Context, e Event, opts ...Option) (err error) {
	ctx, end := d.start(ctx, 1)
	defer func() { end(err) }()
	b, err := d.encode(ctx, e, opts)
	if err != nil {
		return err
	}
	if d.owned != nil {
		err = d.owned.EnqueueOwned(ctx, b) // b is ours and goes no further
	} else {
		err = d.topic.Enqueue(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("event: dispatch %s: %w", e.Type(), err)
	}
	return nil
}

func (d *dispatcher) DispatchAt(ctx context.Context, e Event, at time.Time, opts ...Option) (err error) {
	ctx, end := d.start(ctx, 1)
	defer func() { end(err) }()
	b, err := d.encode(ctx, e, opts)
	if err != nil {
		return err
	}
	if err := pubsub.EnqueueAt(ctx, d.topic, b, at); err != nil {
		return fmt.Errorf("event: dispatch %s at %v: %w", e.Type(), at, err)
	}
	return nil
}

func (d *dispatcher) DispatchBatch(ctx context.Context, events ...Event) (err error) {
	if len(events) == 0 {
		return nil
	}
	ctx, end := d.start(ctx, len(events))
	defer func() { end(err) }()
	data := make([][]byte, len(events))
	for i, e := range events {
		b, err := d.encode(ctx, e, nil)
		if err != nil {
			return fmt.Errorf("event: batch item %d of %d: %w", i, len(events), err)
		}
		data[i] = b
	}
	if err := pubsub.EnqueueBatch(ctx, d.topic, data); err != nil {
		return fmt.Errorf("event: dispatch batch of %d: %w", len(events), err)
	}
	return nil
}

func (d *dispatcher) DispatchUnique(ctx context.Context, key string, e Event, opts ...Option) (_ bool, err error) {
	ctx, end := d.start(ctx, 1)
	defer func() { end(err) }()
	b, err := d.encode(ctx, e, opts)
	if err != nil {
		return false, err
	}
	ok, err := pubsub.EnqueueUnique(ctx, d.topic, key, b)
	if err != nil {
		return false, fmt.Errorf("event: dispatch %s with key %q: %w", e.Type(), key, err)
	}
	return ok, nil
}
