// Package pubsub is conveyor's contract for applications: the interfaces
// every backend implements, the errors they return, the retry policy they
// share, the optional abilities an application calls, and topic injection.
//
// Operators' tools (peek, cancel, dead letters, stats, pause, quiesce)
// use package pubsub/admin; wrapper authors (tracing, metrics) package
// pubsub/wrap; backend authors package pubsub/driver, which the engine
// (pubsub/engine) turns into a PubSub. docs/architecture.md has the map.
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
//     up to 1 h, ±10 % jitter, never over 1 h). After
//     RetryPolicy.MaxAttempts deliveries (default 20) a failed message is
//     dead: kept, listable and re-queueable (admin.ListDead), never dropped.
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
// A topic can have named subscriptions (Subscribe). Each gets its own copy
// of every message published after it was created, and is, for its copies,
// a work queue as above, shared by every handle on its name in any
// process. Topic(name) publishes, and its Dequeue reads the default
// subscription (DefaultSubscription). A message goes to every subscription
// the topic has when published, or, when it has none, to the default one:
// a plain queue loses nothing. A publish in a transaction (WithTx) writes
// every copy or none. An Inbox remembers the keys a subscription's
// consumers claimed (Claim), so that a redelivery makes its effects once.
// Creating is idempotent; admin.DeleteSubscription removes one. A
// subscription can have its own retry policy (SubscribeWith; another
// policy later is refused: ErrSubscriptionConflict). docs/architecture.md
// has the details.
//
// Every backend runs package pubsubtest's checks of all this: swapping
// backends changes only durability and sharing across processes.
//
// # Optional abilities
//
// Small interfaces a backend may implement (Delayer, Inbox, Failer, ...),
// each called through a package function its doc names (EnqueueAt, Claim,
// Fail, ...), which finds it through wrappers (As) and returns
// ErrUnsupported, or uses the documented fallback, when the backend lacks
// it. WithTx runs an enqueue in the caller's transaction; WithHeader gives
// messages a Header. A failure no caller hears of is a Failure, handed to
// the OnFailure hook of a backend's, relay's or Service's options. A
// message's Identity is its HeaderMessageID header, else its ID.
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
