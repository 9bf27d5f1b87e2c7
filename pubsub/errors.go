package pubsub

import "errors"

// Sentinel errors shared by every backend. Backends wrap them with context;
// match them with errors.Is.
var (
	// ErrClosed is returned by a topic or PubSub used after Close.
	ErrClosed = errors.New("pubsub: closed")
	// ErrSettled is returned by Ack, Nack and the other settle calls on a
	// delivery that was already settled.
	ErrSettled = errors.New("pubsub: message already settled")
	// ErrLeaseExpired is returned when a delivery is settled or extended
	// after its lease ran out: the message may have been handed to another
	// consumer, and that newer delivery is left untouched.
	ErrLeaseExpired = errors.New("pubsub: lease expired")
	// ErrInvalidTopic is returned for a topic name ValidateTopicName rejects.
	ErrInvalidTopic = errors.New("pubsub: invalid topic name")
	// ErrInvalidSubscription is returned for a subscription name
	// ValidateSubscriptionName rejects.
	ErrInvalidSubscription = errors.New("pubsub: invalid subscription name")
	// ErrNoSubscription is returned when a subscription asked for by name
	// does not exist (for example admin.DeleteSubscription of one never
	// created, or a Dequeue of a subscription deleted since).
	ErrNoSubscription = errors.New("pubsub: no such subscription")
	// ErrInvalidKey is returned for a unique-enqueue or inbox key that
	// ValidateKey rejects.
	ErrInvalidKey = errors.New("pubsub: invalid key")
	// ErrInvalidHeader is returned by an enqueue whose header (WithHeader)
	// ValidateHeader rejects.
	ErrInvalidHeader = errors.New("pubsub: invalid header")
	// ErrTooLarge is returned by Enqueue for data over the backend's size limit.
	ErrTooLarge = errors.New("pubsub: message too large")
	// ErrUnsupported is returned by the package-level helpers (of this
	// package, pubsub/admin and pubsub/wrap) when a backend lacks the
	// optional ability asked for.
	ErrUnsupported = errors.New("pubsub: not supported by this backend")
	// ErrNoBackend is returned by topic injection when no PubSub is registered.
	ErrNoBackend = errors.New("pubsub: no backend registered")
)
