package wrap

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// EnqueueStarter is a Topic (a wrapper) that starts its work for an
// enqueue before the caller builds the messages: a trace span whose
// context the caller then writes into each message. The event package
// calls it before it encodes events, so that each event carries the
// publish span's trace context as CloudEvents attributes.
type EnqueueStarter interface {
	// StartEnqueue starts the work for an enqueue of n messages. The
	// caller builds the messages with the returned ctx (its header, see
	// HeaderFrom), enqueues them with it, and calls end once with the
	// outcome.
	StartEnqueue(ctx context.Context, n int) (_ context.Context, end func(error))
}

// StartEnqueue calls t's EnqueueStarter, if t or what it wraps has one;
// otherwise it returns ctx and an end that does nothing.
func StartEnqueue(ctx context.Context, t pubsub.Topic, n int) (context.Context, func(error)) {
	if s, ok := pubsub.As[EnqueueStarter](t); ok {
		return s.StartEnqueue(ctx, n)
	}
	return ctx, endNothing
}

func endNothing(error) {}
