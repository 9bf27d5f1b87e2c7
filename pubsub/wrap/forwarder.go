package wrap

// Forwarder is a wrapper whose implementations of some optional abilities
// only forward them to the value it wraps. pubsub.As reports such an
// ability on the wrapper only when the wrapped chain has it too: a traced
// topic over a backend without an all-or-none batch does not say it has
// one.
type Forwarder interface {
	// Forwards reports whether the wrapper's implementation of the ability
	// whose interface type T is given as a nil *T (for example
	// (*pubsub.BatchEnqueuer)(nil)) only forwards to the wrapped value.
	Forwards(ability any) bool
}
