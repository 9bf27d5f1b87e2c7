// Package dbpubsub is the durable backend of conveyor: a pubsub.PubSub
// whose messages are rows of a PostgreSQL table, shared by every process
// that opens the same table. It is the one-line swap for channelpubsub:
//
//	channelpubsub.Register(ctx)  ⇄  dbpubsub.Register(ctx)
//
// # Use
//
//	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL")) // pgx stdlib + bun's pgdialect
//	if err := migrations.Migrate(ctx, db); err != nil { ... } // or migrations.Verify
//	ps, err := dbpubsub.New(db, dbpubsub.Options{})
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	err = orders.Enqueue(ctx, []byte(`{"id":1}`))
//	m, err := orders.Dequeue(ctx)
//	err = m.Ack(ctx)
//
// With an injector: di.RegisterBorrowed(ctx, db) (the app closes db) or
// di.RegisterSingleton(ctx, db) (di.Shutdown does), then Register(ctx).
// Every enqueue runs in the caller's transaction when ctx carries one, so
// that a rollback removes the message with the caller's other writes:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the caller's writes on tx ...
//		return orders.Enqueue(dbpubsub.WithTx(ctx, tx), data)
//	})
//
// # Guarantees
//
// Every message is delivered at least once, to one consumer at a time,
// oldest due first (run_at, then id), to any process on the table. Nack
// backs off by the shared pubsub.RetryPolicy; a message past its attempts
// is dead: kept, listed, re-queued or deleted one by one. Peek, Message and
// Cancel run bounded, index-served statements (inspect.go). A delivery not
// settled within its lease is handed out again, counting the attempt. A
// settle from a delivery whose lease ran out never touches the newer
// delivery (every settle is fenced by the row's delivery token) and
// returns an error wrapping pubsub.ErrLeaseExpired. By default Ack returns
// once the ack is queued for a grouped write, so an ack lost with the
// process (within milliseconds of the call) brings its message back after
// its lease; a queued ack whose statement failed for another reason than
// the lease (a lost connection, a server restarting, a deadlock or a
// serialization failure) is written again on another connection while its
// lease holds. With Options.ConfirmAck, Ack returns once it is committed.
// Claims, queued acks and notifications skip the WAL flush (their own
// transactions only): a PostgreSQL crash may bring back the messages
// claimed or acked in its last moment, never lose one. Every optional
// ability of package pubsub is offered.
//
// A write (enqueue, settle) whose ctx ends before it is sent returns ctx's
// error and changed nothing. Once sent, it returns when its ctx ends, with
// ctx's error wrapping ErrOutcomeUnknown (in doubt: it may yet commit),
// so that no call outlives its ctx on a server that stopped answering: an
// enqueue's statement goes on, up to Options.StatementTimeout, for the
// other calls that share it; a settle's outcome is recorded on its
// message. In a caller's transaction an enqueue's statement is canceled
// when ctx ends (pgx), which aborts the transaction: it returns ctx's
// error, and nothing of the transaction can commit. An error after it was
// sent (in doubt, a lost connection, Close) may hide a commit: retry with
// EnqueueUnique, or claim in the consumer (pubsub.Claim). No call holds a pooled connection while
// it waits for another one, so a pool of any size serves any number of
// callers, first uses of a topic included. A schema that is not migrated is an
// error wrapping migrations.ErrNotMigrated. While the database cannot be
// reached, Enqueue returns the error and Dequeue keeps trying, logging,
// until its ctx ends. Every statement, its own or a caller's, has a
// deadline (Options.StatementTimeout): connections that stop answering
// fail it and are replaced, and consumption goes on. After Close every
// call returns pubsub.ErrClosed.
//
// Subscriptions (ps.Subscribe, pubsub.Subscribe) are rows of a table, seen
// by every process at once: a publish writes one copy per subscription in
// one statement, in the caller's transaction when there is one (all copies
// or none), and each copy is a message of its own (its own ID) in its
// subscription's queue. The inbox (pubsub.Claim) writes its claims in the
// caller's transaction; they are pruned after Options.Retention. A pause
// (pubsub.Pause) is a row too: no claim takes a paused queue's rows.
//
// # Model
//
// A message for now waits in its topic's ready table until its first
// claim moves it into the message table, where delayed, retried, finished
// and dead messages live; the view conveyor_events_all shows them all. A
// subscription is a queue of its own there, named after its topic. A
// message's header (pubsub.WithHeader) is a JSON object in its row (NULL
// without one), kept by every copy, redelivery and re-queue. Consumers
// wake on LISTEN/NOTIFY and poll every Options.PollInterval as the
// fallback. Each PubSub rescues expired leases and prunes finished and
// dead rows past Options.Retention and Options.DeadRetention.
// docs/architecture.md says where each behaviour lives.
//
// # Failures
//
// Options.OnFailure hears of each claim retried and each message that goes
// dead (pubsub.Failure, with its cause: attempts exhausted, rejected,
// lease ran out), in a goroutine of its own that never holds up a delivery
// (see pubsub.Failure).
package dbpubsub
