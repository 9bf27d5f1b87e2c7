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
// backs off by pubsub.RetryPolicy; past its attempts a message is dead:
// kept, listed, re-queued or deleted. A delivery not settled within its
// lease is handed out again; a late settle never touches the newer
// delivery (fenced by the row's delivery token) and wraps
// pubsub.ErrLeaseExpired. By default Ack returns once queued for a
// grouped write, retried on another connection while its lease holds if
// its statement fails; Options.ConfirmAck returns once committed. A
// PostgreSQL crash may bring back what was claimed or acked in its last
// moment, never lose a message. Every optional ability of pubsub is
// offered.
//
// No call outlives its ctx: a write whose ctx ends before it is sent
// changed nothing and returns ctx's error; once sent, it returns ctx's
// error wrapping ErrOutcomeUnknown (it may yet commit: retry with
// EnqueueUnique, or claim in the consumer). In a caller's transaction the
// statement is canceled instead and the transaction cannot commit. Every
// statement has a deadline (Options.StatementTimeout), and no call holds a
// pooled connection while it waits for another, so a pool of any size
// serves any number of callers. An unmigrated schema wraps
// migrations.ErrNotMigrated; after Close every call returns
// pubsub.ErrClosed. docs/design/dbpubsub.md has the reasons and the tests.
//
// # Model
//
// A message for now waits in its topic's ready table until its first
// claim moves it into the message table, where delayed, retried, finished
// and dead messages live (the view conveyor_events_all shows them all).
// Subscriptions are rows, seen by every process at once: a publish writes
// one copy per subscription (its own ID) in one statement, in the caller's
// transaction when there is one. The inbox (pubsub.Claim) and pauses are
// rows too. Headers are a JSON object in the row. Consumers wake on
// LISTEN/NOTIFY and poll every Options.PollInterval; each PubSub rescues
// expired leases and prunes past Options.Retention and DeadRetention.
// Options.OnFailure hears of each claim retried and each message that goes
// dead (pubsub.Failure). docs/architecture.md says where each behaviour
// lives.
package dbpubsub
