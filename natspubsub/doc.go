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
// natspubsub is a driver of conveyor's engine (package pubsub/engine):
// the engine implements the contract (input checks, closed state,
// settle-once, the retry decision, the failure hook, error wording), this
// package only the JetStream store (docs/writing-a-backend.md).
//
// # Guarantees
//
// docs/natspubsub.md has each of these at length, with its reasons.
//
//   - Enqueue returns once the server stored the message; every message is
//     delivered at least once, to one consumer of a subscription at a time,
//     in the stream's order. Nack backs off with pubsub.RetryPolicy; past
//     its attempts a message is dead, kept for Options.DeadRetention.
//   - A message no handler received never dies for its lease: one fetched
//     ahead is given back before half its lease and recorded unseen in the
//     topic's inbox bucket (record.go), and its attempt leaves those out.
//   - Ack returns once sent; Options.ConfirmAck waits for the server. A
//     confirmed ack survives a server restart, not a SIGKILL just after it
//     nor a machine crash: effects that must happen once need the inbox
//     (Claim). A message is never both dead and delivered again.
//   - A settle after the lease ran out by this process's clock wraps
//     pubsub.ErrLeaseExpired (the server does not fence settles).
//   - EnqueueUnique refuses a key within Options.UniqueWindow; EnqueueAt
//     publishes when due; Claim writes at once (no caller's transaction:
//     pubsub.WithTx is ErrUnsupported); no pause, no Peek or Cancel
//     (JetStream 2.9).
//   - EnqueueBatch publishes every item at once, in order, then waits for
//     their acknowledgements (pubsub.PipelinedEnqueuer): not all or none,
//     an item the server refuses is named in a *pubsub.BatchError and the
//     others are stored (JetStream 2.9 has no atomic batch).
//   - Every request has a deadline (Options.RequestTimeout or the ctx's).
//     Enqueue returns by its ctx's end even when the socket is full: its
//     message is then in doubt (retry with EnqueueUnique, or claim in the
//     consumer); an error before sending leaves nothing. Connect's
//     connections (ConnectOptions) ping every half request timeout and
//     replace a silent connection within about 1.5 request timeouts.
//   - Options.OnFailure hears of each fetch retried and each message that
//     goes dead, with its cause (pubsub.Failure). After Close every call
//     returns pubsub.ErrClosed.
package natspubsub
