package pubsub

// Wrappers. Middleware that wraps a PubSub, a Topic or a Message (to add
// tracing, metrics, logging...) exposes what it wraps with an Unwrap
// method, as an error wrapping another does:
//
//	type tracedTopic struct{ pubsub.Topic }
//
//	func (t tracedTopic) Unwrap() pubsub.Topic { return t.Topic }
//
// The helpers of this package (EnqueueBatch, EnqueueAt, ListDead,
// ExtendLease, ...) and the backends' own (dbpubsub.WithTx needs none) look
// for an optional ability on the value first, then on what it wraps, down
// the chain, as errors.As does: a wrapped Topic keeps every ability of the
// backend under it. A wrapper that implements an ability itself is found
// first, so it can intercept that ability too.

// As finds the first value in v's Unwrap chain that is a T: v itself, or
// what v wraps (Unwrap() Topic, Unwrap() Message or Unwrap() PubSub), and
// so on. It reports false when none is.
func As[T any](v any) (T, bool) {
	for v != nil {
		if t, ok := v.(T); ok {
			return t, true
		}
		switch w := v.(type) {
		case interface{ Unwrap() Topic }:
			v = w.Unwrap()
		case interface{ Unwrap() Message }:
			v = w.Unwrap()
		case interface{ Unwrap() PubSub }:
			v = w.Unwrap()
		default:
			v = nil
		}
	}
	var zero T
	return zero, false
}
