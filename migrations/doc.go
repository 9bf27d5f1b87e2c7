// Package migrations owns the SQL schema of dbpubsub, the PostgreSQL
// backend of conveyor.
//
// The SQL is embedded in the binary and applied with bun's migrate, in a
// migrations table of its own (conveyor_events_migrations by default), so
// it coexists with an app's own bun migrations. Each migration runs in a
// transaction and is recorded as applied only when it succeeded; several
// services starting at once are serialised by a PostgreSQL advisory lock
// held on a dedicated connection, so calling Migrate at every start-up is
// safe:
//
//	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
//	...
//	if err := migrations.Migrate(ctx, db); err != nil {
//		log.Fatal(err)
//	}
//
// Services that do not migrate themselves call Verify at start-up: it
// returns an error wrapping ErrNotMigrated that says, in plain words, that
// the schema is missing or behind and what to run. The same can be done
// from a shell:
//
//	go run github.com/conveyorgo/conveyor/dbpubsub/cmd/conveyor-migrate -dsn "$DATABASE_URL"
//
// The tables are created in the first schema of the connection's
// search_path. The message table is named DefaultTable unless WithTable
// says otherwise (it must then match dbpubsub's Options.Table). Migration
// 0002 adds beside it <table>_ready, where messages for now wait until
// their first claim, and the view <table>_all over both. A process that
// predates 0002 neither reads nor writes the ready table: upgrade the
// consumers first, or all processes at once.
//
// Migration 0003 gives each topic a ready table of its own, a child of
// <table>_ready (table inheritance) with one index, its primary key on id,
// made on the topic's first use by the SQL function <table>_ready_table
// (ReadyTableFunc) and numbered in the registry <table>_topics: topic t's
// is <table>_ready_<n>. It moves the rows waiting in <table>_ready to their
// topics' tables. Reading <table>_ready (and the view) still shows every
// topic's rows, so processes older than 0003 keep claiming them, and a
// trigger moves what they insert into <table>_ready to the topic's table
// (their enqueues in a caller's transaction then notify nobody: consumers
// find those rows at their next poll).
// Its down migration moves the rows back into <table>_ready. The function
// runs with the rights of its owner, the role that ran the migrations, so
// an app whose role may only read and write the tables (and use the
// message table's sequence) can use new topics; each new table gets the
// grants that <table>_ready has.
//
// Migration 0004 makes each nextval of the message table's id sequence
// reserve a block of 1024 ids (INCREMENT BY 1024): dbpubsub gives the rows
// of a batch of up to 1024 messages the ids of one block, one nextval per
// statement instead of one per row. Ids stay unique and increasing in the
// order statements take them, and are no longer dense. Processes older
// than 0004 take one nextval per row, which stays correct. dbpubsub reads
// the sequence's increment when it first looks a topic up, so a process
// started before 0004 goes on with one nextval per row until it restarts.
// Its down migration sets the increment back to 1 after taking one more
// block; stop the processes of 0004 or later first.
package migrations
