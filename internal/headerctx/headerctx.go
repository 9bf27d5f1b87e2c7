package headerctx

import "context"

// Key is the context key of the header (a map[string]string, or a Checked)
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
