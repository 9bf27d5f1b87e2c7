package pubsub

// Wrappers. Middleware that wraps a PubSub, a Topic or a Message (to add
// tracing, metrics, logging...) exposes what it wraps with an Unwrap
// method, as an error wrapping another does:
//
//	type tracedTopic struct{ pubsub.Topic }
//
//	func (t tracedTopic) Unwrap() pubsub.Topic { return t.Topic }
//
// The helpers of this package (EnqueueBatch, EnqueueAt, ExtendLease, ...),
// of packages pubsub/admin and pubsub/wrap, and the backends' own look
// for an optional ability on the value first, then on what it wraps, down
// the chain, as errors.As does: a wrapped Topic keeps every ability of the
// backend under it. A wrapper that implements an ability itself is found
// first, so it can intercept that ability too. A wrapper that implements
// abilities only to observe them (tracing an EnqueueBatch, say) declares
// it with a Forwards method (package pubsub/wrap, Forwarder), so that it
// never claims an ability the value it wraps lacks.

// As finds the first value in v's Unwrap chain that is a T: v itself, or
// what v wraps (Unwrap() Topic, Unwrap() Message or Unwrap() PubSub), and
// so on. A wrapper that says it only forwards T (wrap.Forwarder) counts
// only when a value below it is a T. It reports false when none is.
func As[T any](v any) (T, bool) {
	for v != nil {
		if t, ok := v.(T); ok {
			f, fwd := v.(forwarder)
			if !fwd || !f.Forwards((*T)(nil)) {
				return t, true
			}
			if _, below := As[T](unwrap(v)); below {
				return t, true
			}
			break
		}
		v = unwrap(v)
	}
	var zero T
	return zero, false
}

// unwrap returns what v wraps, or nil.
func unwrap(v any) any {
	switch w := v.(type) {
	case interface{ Unwrap() Topic }:
		return w.Unwrap()
	case interface{ Unwrap() Message }:
		return w.Unwrap()
	case interface{ Unwrap() PubSub }:
		return w.Unwrap()
	}
	return nil
}

// forwarder is wrap.Forwarder, which this package cannot import.
type forwarder interface{ Forwards(ability any) bool }
