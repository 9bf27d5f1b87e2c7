package pubsub

import "context"

// HandlingContext returns ctx carrying m's handling context (the span of
// its processing, when m comes from a tracing wrapper: wrap.ContextCarrier),
// or ctx itself. A consumer handles m with it, so that the spans and logs
// it makes belong to m's trace. An event Service does this for its
// listeners.
func HandlingContext(ctx context.Context, m Message) context.Context {
	if c, ok := As[contextCarrier](m); ok {
		return c.Context(ctx)
	}
	return ctx
}

// contextCarrier is wrap.ContextCarrier, the same unnamed interface type
// (an alias there), which this package cannot import.
type contextCarrier = interface {
	Context(ctx context.Context) context.Context
}
