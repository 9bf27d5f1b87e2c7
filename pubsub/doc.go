// Package pubsub is conveyor's contract: the interfaces every backend
// implements, the errors they return, the retry policy they share, the
// optional abilities they may offer, and topic injection.
//
// # The contract
//
// A PubSub is a set of named topics. A Topic is a work queue:
//
//   - Each message goes to one consumer at a time (competing consumers) and
//     is delivered at least once. Topics are isolated from each other. One
//     consumer without retries sees messages in the order they were enqueued.
//   - Dequeue blocks until a message is ready or ctx ends, then returns
//     ctx's error.
//   - Ack settles a message for good. Nack gives it back after a backoff
//     that doubles with each attempt (RetryPolicy; by default 1 s, 2 s, 4 s …
//     capped at 1 h, ±10 % jitter). After RetryPolicy.MaxAttempts deliveries
//     (default 20) a failed message is dead: kept, listable and re-queueable
//     (DeadLetters), never dropped.
//   - Each delivery holds a lease (default 30 s). A message neither acked nor
//     nacked within it is delivered again at once, counting an attempt: a
//     crashed consumer loses nothing. Settling the old delivery afterwards
//     returns ErrLeaseExpired and leaves the new one alone.
//   - Settling twice returns ErrSettled; a closed topic ErrClosed; a bad
//     topic name ErrInvalidTopic; data over the size limit (default 4 MiB)
//     ErrTooLarge; a bad subscription name ErrInvalidSubscription, a bad
//     key ErrInvalidKey. All are wrapped with context: match them with errors.Is.
//   - Closing a topic handle stops its Enqueue and Dequeue; the messages stay
//     in the backend, and deliveries already made can still be settled.
//
// # Subscriptions
//
// A topic can have any number of named subscriptions (Subscriber). Each
// receives its own copy of every message published to the topic after it
// was created, and is, for its copies, a work queue as above: competing
// consumers, leases, retries, dead letters and stats are per subscription.
// Handles on one subscription name, in any process, share it.
//
// Topic(name) keeps the rules above: its enqueues publish and its Dequeue
// reads the default subscription (DefaultSubscription). A message goes to
// every subscription the topic has when it is published; a topic with none
// keeps it for its default subscription, so a plain queue loses nothing.
// Consuming from the default subscription, or Subscribe with its name,
// makes it one of the topic's subscriptions; until then a topic consumed
// only through named ones keeps no copies for it. Creating a subscription
// is idempotent, and durable on a durable backend; DeleteSubscription
// removes it and its copies. Nothing is deleted otherwise. On a backend
// with transactions a publish in one (WithTx) writes every copy or none.
// Copies are distinct messages: each has an ID of its own.
//
// An Inbox remembers the keys a subscription's consumers claimed, so a
// consumer can make a redelivered message's effects once (Claim).
//
// The package pubsubtest checks all of this; every backend runs it.
// Swapping backends changes durability and sharing across processes, and
// nothing else a caller can observe.
//
// # Optional abilities
//
// Delayed and batch enqueue, attempt numbers, lease extension, failing with
// a reason, rejecting at once, dead letters and stats are small interfaces a
// backend may implement (Delayer, BatchEnqueuer, Attempter, LeaseExtender,
// Failer, Rejecter, DeadLetters, Stater). Call them through the package
// functions of the same names: they find the ability through any wrapper
// that exposes Unwrap (see As), and return ErrUnsupported, or use the
// documented fallback, when a backend lacks one.
//
// WithTx asks every enqueue made with its ctx to run in the caller's
// transaction; a backend that cannot honour it refuses with ErrUnsupported.
//
// # Injecting topics
//
// After a backend's Register and RegisterTopic, a struct field
//
//	Queue pubsub.Topic `inject:"orders"`
//
// filled with di.Fill gets the backend's topic "orders":
//
//	ctx = di.NewContext(ctx)
//	channelpubsub.Register(ctx) // or dbpubsub.Register(ctx): the one-line swap
//	pubsub.RegisterTopic(ctx)
//	var h struct {
//		Queue pubsub.Topic `inject:"orders"`
//	}
//	err := di.Fill(ctx, &h)
package pubsub
