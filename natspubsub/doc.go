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
// A topic is a stream that keeps a message until every subscription's
// consumer has acked it (conveyor purges below their ack floors). A subscription is a durable
// pull consumer (DeliverNew), shared by every process with the same
// prefix; each copy has an ID of its own. The default subscription's
// consumer is kept in reserve while the topic has no subscription, so that
// a plain queue loses nothing. Dead messages wait in the topic's
// dead-letter stream, delayed ones in its schedule stream, inbox claims in
// its key-value bucket. Conveyor creates them on first use, or with
// Options.Bind only binds those the operator made (PubSub.Provision), and
// a missing one is ErrNoStream; names on the server are tokens of the
// topic's and subscription's names (names.go).
// docs/natspubsub.md has the mapping and the reasons.
//
// # Guarantees
//
// Enqueue returns once the server stored the message. Every message is
// delivered at least once, to one consumer of a subscription at a time, in
// the stream's order. Nack gives it back with the shared
// pubsub.RetryPolicy's backoff; past its attempts a message is dead. The
// attempt is the server's delivery count, so a delivery fetched and never
// handed to a consumer (given back, or kept past its lease) counts too.
// Ack returns once the ack is sent; Options.ConfirmAck makes it wait for
// the server's confirmation, a round trip per message. Until the server
// applied an ack, Stats count its message as processing.
//
// The lease is the consumers' AckWait. A settle after the lease ran out by
// this process's clock (less a margin of a tenth of the lease, at most a
// second) returns an error wrapping pubsub.ErrLeaseExpired; unlike
// dbpubsub, the server does not fence a settle by delivery, so with clocks
// apart by more than the margin a late settle can settle a redelivery.
//
// EnqueueUnique refuses a key within the stream's duplicate window
// (Options.UniqueWindow, 2 minutes by default), whatever became of its
// message, and forgets it after (pubsubtest.Abilities.UniqueWindow).
// EnqueueAt publishes the message when due, to the subscriptions made
// before the enqueue; it is due within milliseconds while a process
// consumes the topic. Claim (the inbox) writes at once: NATS takes part in
// no caller's transaction, and an enqueue in one (pubsub.WithTx) is
// refused with pubsub.ErrUnsupported. Batch enqueue and pausing are not
// offered (JetStream 2.9 has no atomic batch and no consumer pause); dead
// messages are kept for Options.DeadRetention (30 days by default). Of the
// inspection abilities it offers Topics and DeleteDead, not Peek or Cancel
// (inspect.go says why). A message's pubsub.Header travels
// as NATS headers under keys of its own ("Conveyor-H-<key>"), so no key is
// refused or taken for conveyor's or the server's. The largest payload is
// the server's max_payload (1 MiB by default) less about 21 KiB for
// headers.
//
// Every request to the server has a deadline (Options.RequestTimeout, or
// the caller's earlier one). While the server cannot be reached, Enqueue
// returns the error and Dequeue keeps asking, logging once, until its ctx
// ends. After Close every call returns pubsub.ErrClosed.
//
// # Failures
//
// Options.OnFailure hears of each fetch retried and each message that goes
// dead (pubsub.Failure, with its cause: attempts exhausted, rejected,
// lease ran out), in a goroutine of its own that never holds up a delivery
// (see pubsub.Failure).
package natspubsub
