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
//     up to 1 h, ±10 % jitter, never over 1 h). After
//     RetryPolicy.MaxAttempts deliveries (default 20) a failed message is
//     dead: kept, listable and re-queueable (DeadLetters), never dropped.
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
// A topic can have named subscriptions (Subscriber). Each gets its own copy
// of every message published after it was created, and is, for its copies,
// a work queue as above (leases, retries, dead letters, stats), shared by
// every handle on its name in any process. Topic(name) publishes, and its
// Dequeue reads the default subscription (DefaultSubscription). A message
// goes to every subscription the topic has when published, or, when it has
// none, to the default one: a plain queue loses nothing. Consuming the
// default subscription or subscribing to its name makes it one of the
// topic's; until then a topic read only through named ones keeps nothing
// for it. Creating is idempotent (durable on a durable backend); only
// DeleteSubscription removes one, with its copies. A publish in a
// transaction (WithTx) writes every copy or none. Each copy has its own
// ID. An Inbox remembers the keys a subscription's consumers claimed
// (Claim), so that a redelivery makes its effects once.
//
// A subscription can have its own retry policy (SubscribeWith,
// SubscriptionOptions; go-messaging's MaxDeliver): the store keeps it with
// the subscription, so that every handle in every process delivers with
// it, its Nacks and the deaths of messages whose last lease ran out alike;
// a subscription made without one (by Subscribe, or on first use) has
// none of its own and delivers with each PubSub's. A subscription keeps
// the policy it was made with: SubscribeWith of another is refused with
// ErrSubscriptionConflict (two versions of a service would otherwise undo
// each other's), and Subscribe or PubSub.Topic opens it with its own. To
// change it, delete the subscription and make it again.
//
// The package pubsubtest checks all of this; every backend runs it.
// Swapping backends changes durability and sharing across processes, and
// nothing else a caller can observe.
//
// # Optional abilities
//
// Small interfaces a backend may implement (optional.go, inspect.go,
// pause.go, subscription.go, inbox.go, ackcount.go, quiesce.go), each
// called through the package functions its doc names: EnqueueAt,
// EnqueueBatch, EnqueueUnique, ExtendLease, Fail, Reject, ListDead,
// TopicStats, Pause, Claim, Subscribe, Peek, Quiesce (a PubSub's consumers
// held still, in this process) and so on. They find the ability through any
// wrapper that exposes Unwrap (As) and return ErrUnsupported, or use the
// documented fallback, when a backend lacks one; a wrapper that only
// observes an ability declares so (Forwarder) and never claims one the
// backend lacks. WithTx runs an enqueue in the caller's transaction;
// WithHeader gives messages a Header.
//
// # Failures and identity
//
// What fails where no caller gets an error is a Failure, handed to the
// OnFailure hook of a backend's, relay's or Service's options (or logged)
// from a goroutine of its own that never holds up a delivery (failure.go).
// A message's Identity is its HeaderMessageID header, else its ID: a relay
// sets the header, and ClaimMessage drops a second copy however it came.
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
