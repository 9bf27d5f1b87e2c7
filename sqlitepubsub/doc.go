// Package sqlitepubsub is conveyor's embedded durable backend: a
// pubsub.PubSub whose messages are rows of a SQLite file, with no server
// at all, shared by every process that opens the file. It is the one-line
// swap for channelpubsub and dbpubsub:
//
//	channelpubsub.Register(ctx)  ⇄  sqlitepubsub.RegisterFile(ctx, path, sqlitepubsub.Options{})
//
// # Use
//
//	ps, err := sqlitepubsub.Open("app.db", sqlitepubsub.Options{}) // creates the file and its tables
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	err = orders.Enqueue(ctx, []byte(`{"id":1}`))
//	m, err := orders.Dequeue(ctx)
//	err = m.Ack(ctx)
//
// An app whose own tables are in the file opens it with OpenDB, keeps the
// *bun.DB, and enqueues in its transactions (the outbox): the message
// exists exactly when the app's writes commit.
//
//	db, err := sqlitepubsub.OpenDB("app.db", "") // WAL, busy timeout, IMMEDIATE transactions
//	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{})
//	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the app's writes on tx ...
//		return orders.Enqueue(sqlitepubsub.WithTx(ctx, tx), data)
//	})
//
// A transaction on another file or database is refused with
// pubsub.ErrUnsupported (and ErrOtherDatabase).
//
// # Guarantees
//
// Every message is delivered at least once, to one consumer at a time, in
// any process on the file, oldest due first. The engine decides retries,
// dead letters and settles once; the store fences each settle by the
// row's delivery token, so a late settle never touches a newer delivery.
// An Enqueue, Ack, Nack or Reject that returned nil is committed: at
// synchronous=FULL (the default of Open and OpenDB) it survives a power
// loss; at NORMAL it survives the process's crash, and a power loss may
// undo the last commits, never corrupt the file. No call outlives its
// ctx: waiting for a lock another process holds ends with ctx's error
// wrapping ErrBusy. A file that is not a SQLite database, is corrupt, is
// read-only or is full gives an error wrapping ErrNotDatabase, ErrCorrupt,
// ErrReadOnly or ErrFull; nothing is half-written (each write is one
// SQLite transaction).
//
// # Model
//
// One table holds every copy of every message (a copy per subscription,
// its own ID), in a state: ready (due at run_at), processing (leased
// until run_at), finished (acked; kept Options.Retention for its unique
// key and the ack count) or dead. A claim is an UPDATE … RETURNING under
// the file's write lock; SQLite has one writer, so consumers in several
// processes take turns at it for the claim and the settle only, never
// while they handle a message. Within a process the claims, settles and
// enqueues in flight share one transaction and its commit (a group
// commit: one fsync at FULL), the claims of a subscription one statement;
// each call returns once its own write is committed. The
// tables are made on the first call (or by Migrate) in one immediate
// transaction: the write lock is the lock between processes. Consumers
// are woken at once by an enqueue of their own process, and poll every
// Options.PollInterval for the others' (and for the app's transactions
// and delayed messages coming due). docs/design/sqlitepubsub.md has the
// reasons and the measurements.
package sqlitepubsub
