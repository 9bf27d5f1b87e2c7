package pubsub

import "context"

// PubSub is a message broker: a set of named topics. Implementations are
// safe for concurrent use.
//
// Topic never fails: a name that ValidateTopicName rejects yields a topic
// whose every method returns an error wrapping ErrInvalidTopic. Use OpenTopic
// to get that error up front.
type PubSub interface {
	Topic(name string) Topic
}

// Topic is a work queue. Each message is handed to one consumer at a time
// and delivered at least once. Topics are isolated from each other.
type Topic interface {
	// Enqueue adds a copy of data to the topic. It may block for
	// backpressure until there is room or ctx ends.
	Enqueue(ctx context.Context, data []byte) error
	// Dequeue blocks until a message is ready or ctx ends; then it returns
	// ctx's error. The message is leased to the caller until it is settled
	// with Ack or Nack, or its lease expires.
	Dequeue(ctx context.Context) (Message, error)
	// Close releases the topic handle. Later calls on it return ErrClosed.
	// Messages stay in the backend (as far as the backend keeps them).
	Close() error
}

// Message is one delivery of a message.
type Message interface {
	// ID identifies the message; it is the same on every redelivery.
	ID() string
	// Data is the payload exactly as it was enqueued.
	Data() []byte
	// Ack settles the message for good.
	Ack(ctx context.Context) error
	// Nack gives the message back for redelivery after the retry policy's
	// backoff, or makes it dead when its attempts are exhausted.
	Nack(ctx context.Context) error
}
