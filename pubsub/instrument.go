package pubsub

import "context"

// Abilities for instrumentation: a wrapper that traces or measures a
// PubSub (otelconveyor) implements them, and the layers above a Topic (the
// event package, an app's own consumer loop) call them through the helpers
// below, which do nothing when no wrapper is there.

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
func StartEnqueue(ctx context.Context, t Topic, n int) (context.Context, func(error)) {
	if s, ok := As[EnqueueStarter](t); ok {
		return s.StartEnqueue(ctx, n)
	}
	return ctx, endNothing
}

func endNothing(error) {}

// ContextCarrier is a Message (a wrapper) that carries what its handling
// should run in, such as the trace span of its processing.
type ContextCarrier interface {
	// Context returns ctx carrying the message's handling context.
	Context(ctx context.Context) context.Context
}

// HandlingContext returns ctx carrying m's handling context (the span of
// its processing, when m comes from a tracing wrapper), or ctx itself. A
// consumer handles m with it, so that the spans and logs it makes belong
// to m's trace. An event Service does this for its listeners.
func HandlingContext(ctx context.Context, m Message) context.Context {
	if c, ok := As[ContextCarrier](m); ok {
		return c.Context(ctx)
	}
	return ctx
}

// RetryReporter is a Topic that says its retry policy: a wrapper uses it
// to tell a Nack that makes a message dead (its last attempt) from one
// that retries it.
type RetryReporter interface {
	RetryPolicy() RetryPolicy
}

// TopicRetryPolicy returns t's retry policy, with its defaults filled in,
// and whether t says it (RetryReporter).
func TopicRetryPolicy(t Topic) (RetryPolicy, bool) {
	if r, ok := As[RetryReporter](t); ok {
		return r.RetryPolicy().WithDefaults(), true
	}
	return RetryPolicy{}.WithDefaults(), false
}
