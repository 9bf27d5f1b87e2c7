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
// attempt is the server's delivery count less the deliveries no handler
// received: a message fetched ahead is given back before half its lease
// passed (or when nobody consumes, or at Close) and recorded as unseen in
// its record in the topic's inbox bucket (record.go), so a message no
// handler saw never dies for its lease. A delivery in a handler's hand does not make the process fetch
// one more for it.
// Ack returns once the ack is sent; Options.ConfirmAck makes it wait for
// the server's confirmation, a round trip per message. Until the server
// applied an ack, Stats count its message as processing. A confirmed ack
// survives a server restart, not a server killed just after it (the
// server writes acks to disk a moment after confirming them) nor a machine
// crash: an effect that must happen once needs the inbox (Claim). A dead
// message is recorded dead before its ack, and a delivery that may follow
// a forgotten ack of a death (a redelivery, or a message below the highest
// dead one as of this process's start or last reconnect) reads that record
// first: a message is never both dead and delivered again.
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
// the caller's earlier one), and Enqueue returns by its ctx's end even
// when nats.go cannot write to the socket (a full buffer, a failed
// network): the publish goes on in the background, bounded by the request
// timeout and Close, and the Enqueue returns an error wrapping ctx's. Its
// message is then in doubt, as after any error from a publish that was
// sent: it may be stored and delivered (a late store is logged at Warn
// with the message's ID). Retry with EnqueueUnique to store it once, or
// claim in the consumer (pubsub.Claim). Errors that refuse the message
// before it is sent (pubsub.ErrTooLarge, pubsub.ErrInvalidHeader,
// pubsub.ErrUnsupported, a ctx already ended) leave nothing.
//
// Connect's connection pings the server every half request timeout and
// reconnects after 2 unanswered pings, bounds each socket write by the
// request timeout and resets the connection and reconnects after one that
// timed out (so no message cut short is followed by another): a connection
// that went silent is replaced within about one and a half request
// timeouts. A connection given to New should be made with the same
// settings (ConnectOptions); whatever its settings, two request timeouts
// in a row make the PubSub ping the server, and no answer within the
// request timeout makes the connection reconnect (nats.Conn.ForceReconnect).
// While the server cannot be reached, Enqueue returns the error and
// Dequeue keeps asking, logging once, until its ctx ends. After Close
// every call returns pubsub.ErrClosed.
//
// A message published on a topic's subject (Subject) without conveyor, by
// plain nats.go say, is delivered like an enqueued one; docs/natspubsub.md
// says what its ID, header and duplicate detection are.
//
// # Failures
//
// Options.OnFailure hears of each fetch retried and each message that goes
// dead (pubsub.Failure, with its cause: attempts exhausted, rejected,
// lease ran out), in a goroutine of its own that never holds up a delivery
// (see pubsub.Failure).
package natspubsub
