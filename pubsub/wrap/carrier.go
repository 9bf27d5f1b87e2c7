package wrap

import "context"

// ContextCarrier is a Message (a wrapper) that carries what its handling
// should run in, such as the trace span of its processing. A consumer
// reaches it through pubsub.HandlingContext.
//
// It is an alias of an unnamed interface so that pubsub.HandlingContext,
// which cannot import this package, asks pubsub.As for the very same
// type: a Forwarder that reports (*ContextCarrier)(nil) is understood by
// both.
type ContextCarrier = interface {
	// Context returns ctx carrying the message's handling context.
	Context(ctx context.Context) context.Context
}
