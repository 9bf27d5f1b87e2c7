// Package natspubsub is conveyor's backend on NATS JetStream, for apps
// that outgrow one PostgreSQL: a pubsub.PubSub whose topics are streams
// and whose subscriptions are durable pull consumers, shared by every
// process on the same server (or cluster) and Options.Prefix. It is the
// one-line swap for the other backends:
//
//	channelpubsub.Register(ctx)  ⇄  dbpubsub.Register(ctx)  ⇄  natspubsub.Register(ctx)
//
// # Use
//
//	ps, err := natspubsub.Connect(os.Getenv("NATS_URL"), natspubsub.Options{})
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	err = orders.Enqueue(ctx, []byte(`{"id":1}`))
//	m, err := orders.Dequeue(ctx)
//	err = m.Ack(ctx)
//
// With an injector: di.RegisterBorrowed(ctx, nc) (the app closes its
// *nats.Conn) or di.RegisterSingleton(ctx, nc), then Register(ctx).
//
// # Model
//
// A topic is a stream with interest retention: a message is kept until
// every subscription's consumer has acked it. A subscription is a durable
// pull consumer (DeliverNew: it gets what is published after it was
// created), shared by every process with the same prefix; each copy has
// an ID of its own. Conveyor creates the stream on first use and brings
// its consumers' AckWait to Options.Lease. The default subscription's
// consumer is kept in reserve, unlisted, while the topic has no
// subscription, so that a plain queue loses nothing (subscription.go has
// the rules). Names on the server are tokens of the topic's and
// subscription's names (names.go), the names themselves in the
// descriptions. A subscription's dead messages are kept in the topic's
// dead-letter stream with their data, ID, attempts and last error, until
// re-queued, purged, or the subscription is deleted.
//
// # Guarantees
//
// Enqueue returns once the server stored the message. Every message is
// delivered at least once, to one consumer of a subscription at a time, in
// the stream's order. Nack gives it back with the shared
// pubsub.RetryPolicy's backoff (a delayed negative ack); the delivery
// number is the server's count, so a delivery that a process fetched but
// could not hand to a consumer (its Dequeue ended as the message arrived)
// counts as an attempt. Past its attempts a message is dead; a message
// whose last lease ran out is made dead at its next delivery.
//
// Ack returns once the ack is sent on the connection: if the connection or
// the server fails before the server processed it, the message comes again
// after its lease. Options.ConfirmAck makes Ack wait for the server's
// confirmation instead, a round trip per message.
//
// The Dequeues of one subscription in a process fetch together: one pull
// request brings a message for each of them waiting and one for each
// delivery in hand (dequeue.go), so a consumer finds its next message here
// when it comes back; at most that one waits while its handler runs.
//
// Leases: the server's AckWait is the lease. A settle or ExtendLease after
// the lease ran out, by this process's clock (which counts the lease from
// when the delivery arrived, less a margin of a tenth of the lease, at most
// a second), returns an error wrapping pubsub.ErrLeaseExpired and does not
// reach the server. Unlike dbpubsub, the server does not fence a settle by
// delivery: if the clocks of this process and the server disagree by more
// than that margin, a late settle can reach the server after it redelivered
// the message, and then settles the newer delivery.
//
// EnqueueUnique publishes with a Nats-Msg-Id made of the key, and the
// stream refuses a second message with that id within its duplicate window
// (Options.UniqueWindow, 2 minutes by default). A key is remembered for
// the window only, whatever became of its message; dbpubsub keeps it as
// long as the message (pubsubtest.Abilities.UniqueWindow declares the
// difference).
//
// The inbox (Claim, for idempotent listeners) is a key-value bucket per
// topic: a claim is a key created only if absent, kept for
// Options.InboxRetention (a day by default), deleted by its release or
// with its subscription. NATS takes part in no caller's transaction, so a
// claim is written at once, whatever the ctx carries.
//
// Not offered yet (pubsubtest.Abilities says so): delayed and batch
// enqueue (JetStream 2.9 has neither atomic batches nor scheduled
// messages). Enqueue in
// a caller's transaction (pubsub.WithTx) is refused with
// pubsub.ErrUnsupported. The largest payload is the server's max_payload
// (1 MiB by default) less 4 KiB for conveyor's headers.
//
// Every request to the server has a deadline (Options.RequestTimeout, or
// the caller's earlier one). While the server cannot be reached, Enqueue
// returns the error and Dequeue keeps asking, logging once, until its ctx
// ends. After Close every call returns pubsub.ErrClosed.
package natspubsub
