// Package headerctx holds the context key under which pubsub.WithHeader
// keeps the header an enqueue's ctx asks for. pubsub.WithHeader copies the
// header it is given, since its caller may change it afterwards; a
// conveyor package that makes a header for one enqueue and never touches
// it again (otelconveyor's trace context) puts it under Key as it is,
// which saves that copy on every message, and as a Checked when it made
// it valid by construction, which saves its check on every message.
package headerctx

import "context"

// Key is the context key of the header (a pubsub.Header, or a Checked)
// that the enqueues called with the context give their messages. Whoever
// puts a header under it must not change the header afterwards.
type Key struct{}

// Checked is a header under Key that its maker knows to meet
// pubsub.ValidateHeader's rules, which the enqueue then does not check
// again.
type Checked map[string]string

// From returns the header under Key in ctx (nil if none), and whether it
// is a Checked.
func From(ctx context.Context) (h map[string]string, checked bool) {
	switch v := ctx.Value(Key{}).(type) {
	case Checked:
		return v, true
	case map[string]string:
		return v, false
	}
	return nil, false
}
