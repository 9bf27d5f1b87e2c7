// Package dbpubsub is the durable backend of conveyor: a pubsub.PubSub
// whose messages are rows of a PostgreSQL table, shared by every process
// that opens the same table. It is the one-line swap for channelpubsub:
//
//	channelpubsub.Register(ctx)  ⇄  dbpubsub.Register(ctx)
//
// # Use
//
//	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL")) // pgx stdlib + bun's pgdialect
//	...
//	if err := migrations.Migrate(ctx, db); err != nil { ... } // or migrations.Verify
//	ps, err := dbpubsub.New(db, dbpubsub.Options{})
//	...
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	err = orders.Enqueue(ctx, []byte(`{"id":1}`))
//	m, err := orders.Dequeue(ctx)
//	...
//	err = m.Ack(ctx)
//
// With an injector, register the app's *bun.DB and then the PubSub:
//
//	di.RegisterSingleton(ctx, db)
//	dbpubsub.Register(ctx)
//
// To enqueue in the caller's own transaction, so that a rollback removes
// the message with the caller's other writes:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the caller's writes on tx ...
//		return dbpubsub.EnqueueTx(ctx, orders, tx, data)
//	})
//
// # Guarantees
//
// Every message is delivered at least once, to one consumer at a time,
// oldest due first (run_at, then id). The semantics are those of every
// conveyor backend, checked by pubsubtest: Nack backs off by the shared
// pubsub.RetryPolicy and a message past its attempts is dead (kept, listed
// by ListDead, re-queued by RequeueDead); a delivery not settled within its
// lease is handed out again at once, counting the attempt. A settle from a
// delivery whose lease ran out never touches the newer delivery (each claim
// bumps the row's delivery token, and every settle is fenced by it): it
// returns an error wrapping pubsub.ErrLeaseExpired. Ack returns once its
// change is committed.
//
// Options.AsyncAck trades that last guarantee for throughput, as River's
// completer and Watermill's offsets do: Ack returns once the ack is queued,
// and the acks of all consumers are written together, continuously. A
// consumer then needs no round trip per message; an ack that cannot be
// written is logged and its message comes back after its lease. Close,
// Flush and Stats write the queued acks first.
//
// Every topic implements all the optional interfaces of package pubsub:
// Delayer, BatchEnqueuer, UniqueEnqueuer, DeadLetters and Stater on the
// topic; Attempter, LeaseExtender, Failer and Rejecter on the message.
//
// # How it works
//
// A message is a row of the table made by package migrations (default
// conveyor_events): topic, status (pending, processing, finished, dead),
// run_at, data, attempts, delivery token, lease deadline, last error and
// times. A message enqueued for delivery at once waits, until it is first
// claimed, in its topic's ready table (id, topic, data, created_at, and one
// index, the primary key on id): an enqueue then costs about what an
// insert into a bare (id, data) table costs, not the second index a row
// searchable by the claim needs in the message table, nor the (topic, id)
// key of a ready table shared by all topics (0.80-0.85x the bare table's
// insert rate, against 0.93-0.98x). A topic's ready table is made on the
// topic's first use in the database (conveyor_events_ready_<n>, numbered
// in the registry conveyor_events_topics), as a child of
// conveyor_events_ready, so reading that one reads every topic's. Each
// topic so costs a table and an index in the catalog, autovacuum work,
// and seven prepared statements on each connection that uses it (pgx keeps
// 512 per connection):
// a design with a topic per user or per tenant, in the many thousands, is
// better served by fewer topics. The view
// conveyor_events_all shows every message, wherever it waits, in the
// message table's columns. The hot statements (enqueue, claim, ack/nack,
// extend) are constant SQL with $n parameters, built once per PubSub for
// its table (and once per topic for the topic's ready table) and run on
// the *sql.DB under bun (bun renders arguments into the text, which defeats
// pgx's statement cache); bun's builder serves the cold paths (dead
// letters, stats) and migrations.
//
//   - Enqueue: outside a caller's transaction, the calls of up to 32
//     messages that one Topic handle gets while two of its statements are
//     in flight are written together by the next one (one INSERT …
//     SELECT FROM unnest, one commit), each call returning when its own
//     rows are committed. A statement of up to 1024 rows takes its ids
//     from one nextval of the id sequence, which reserves a block of 1024
//     since migration 0004 (the block's first id plus the row's position):
//     ids are unique and increase in the order of the statements, but are
//     not dense.
//   - Claim: one statement takes the due pending rows of the message
//     table (UPDATE … FROM (SELECT … WHERE status = 'pending' AND run_at <=
//     now() ORDER BY run_at, id LIMIT n FOR UPDATE SKIP LOCKED), served by
//     a partial index), then, up to n, the first rows of the topic's ready
//     table by id,
//     which it deletes there and inserts into the message table as
//     processing, under the same id. One goroutine per topic and PubSub
//     claims, per round trip, one row per Dequeue call waiting plus
//     Options.Prefetch, hands them to the waiting calls in order and keeps
//     the rest in a bounded buffer (Options.ClaimBatch). The leases of
//     buffered rows are renewed once a quarter spent (while they wait, and
//     again when handed out), so none runs out unseen; rows nobody asks for
//     are given back (as if never claimed) within 50 ms, and on Close.
//   - Plans: a new message table is empty until claims move rows into
//     it, and the plans PostgreSQL keeps for prepared statements would scan
//     it whole; a PubSub runs ANALYZE on it when its claims have moved
//     1,000, 10,000 and 100,000 rows (unless it holds ten times as many),
//     which makes PostgreSQL plan again. Without the right to ANALYZE (the
//     table's owner has it), autovacuum does it within a minute or so.
//   - Wake-up: a NOTIFY on a channel derived from the schema-qualified
//     table and the topic (hashed: channels are per database and at most 63
//     bytes). An enqueue in a caller's transaction (WithTx, EnqueueTx)
//     notifies in its own statement, so consumers wake when it commits.
//     Any other enqueue wakes this PubSub's consumers at once and leaves the
//     NOTIFY to a notifier goroutine that sends every pending one in a
//     single statement, at most one per millisecond: PostgreSQL serialises
//     the commits of notifying transactions, and a NOTIFY per enqueue
//     halved the rate of concurrent producers. Each PubSub LISTENs
//     on one dedicated pgx connection, made from the DB's own pgx
//     configuration (or Options.ListenDSN), and reconnects by itself;
//     waiting consumers poll every Options.PollInterval as the fallback, and
//     sleep exactly until the next due message (delays, backoffs).
//   - Settling: the acks, nacks and rejects of concurrent consumers are
//     grouped into one statement (UPDATE … FROM unnest(…)); each call
//     returns when its own change is committed (with AsyncAck, an Ack
//     returns when it is queued).
//   - Rescue: every PubSub makes expired leases pending again (or dead)
//     every Options.RescueInterval, safely alongside other processes.
//   - Pruning: every PubSub deletes finished rows older than
//     Options.Retention, in bounded batches.
//
// # Faults
//
// A topic name that pubsub.ValidateTopicName rejects gives a topic whose
// methods return that error; names reach SQL only as parameters. Data over
// Options.MaxDataSize is refused with pubsub.ErrTooLarge. A schema never
// migrated makes Enqueue and Dequeue return an error wrapping
// migrations.ErrNotMigrated that names migrations.Migrate. While the
// database is unreachable Enqueue returns the error and Dequeue keeps
// trying, logging through Options.Logger, until its context ends. A write
// (enqueue, settle) whose ctx ends before it is sent returns ctx's error
// and changed nothing; once sent it is awaited (up to
// Options.StatementTimeout), so that a canceled Enqueue never reports a
// failure for a message that was committed. After
// Close every call returns pubsub.ErrClosed; deliveries made before can no
// longer be settled and come back when their lease runs out.
package dbpubsub
