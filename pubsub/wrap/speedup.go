package wrap

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Speed-ups. A speed-up is a cheaper way to do what a method of the
// contract does (Enqueue without a copy, ID without a new string): a
// caller that finds one may use it instead of that method, and gets the
// same outcome. Unlike an ability, a speed-up is never looked for below a
// wrapper that lacks it (see FindSpeedup): the wrapper's own method (its
// Enqueue, its ID) must run, so through such a wrapper the caller is
// slower, never wrong.
//
// A wrapper author keeps a speed-up by implementing it with a call to the
// wrapped value's (found with FindSpeedup, else the plain method) and
// declaring it with Forwarder, so that the wrapper offers it only when
// the value it wraps does; otelconveyor does so for both.

// OwnedEnqueuer is a pubsub.Topic that can keep the data it enqueues instead
// of a copy (a pubsub.Topic's Enqueue copies, or sends, what it is given: the
// caller may reuse it). The caller of EnqueueOwned hands data over and never
// writes it again; its outcome is Enqueue's. The event package's Dispatcher
// hands over each envelope it encodes.
type OwnedEnqueuer interface {
	EnqueueOwned(ctx context.Context, data []byte) error
}

// IDAppender is a pubsub.Message that can append its ID (pubsub.Message.ID) to
// a buffer instead of making a new string: the event package's Service keeps
// it in the one string it makes for the event's attributes.
type IDAppender interface {
	AppendID(b []byte) []byte
}

// FindSpeedup returns v's speed-up T (such as OwnedEnqueuer on a pubsub.Topic,
// IDAppender on a pubsub.Message) when v itself has it and, if v is a
// Forwarder of T, the value it wraps has it too, down the chain (see
// pubsub.As). Unlike pubsub.As it never finds T below a wrapper that lacks it,
// since that would skip the wrapper's own method.
func FindSpeedup[T any](v any) (T, bool) {
	if t, ok := v.(T); !ok {
		return t, false
	}
	return pubsub.As[T](v)
}
