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
// says otherwise (it must then match dbpubsub's Options.Table). Beside it
// live the ready tables (one per topic, children of <table>_ready, made on
// a topic's first use by the function ReadyTableFunc names, with the grants
// of <table>_ready, so an app role without CREATE can use new topics), the
// registry <table>_topics, the view <table>_all over every message, and
// the subscriptions' tables <table>_subscriptions, <table>_fanout and
// <table>_inbox (an app role that does not own the tables needs SELECT,
// INSERT, UPDATE and DELETE on them, as on <table> and <table>_ready).
// Each nextval of the id sequence reserves a block of 1024 ids: ids are
// unique and increase in the order statements take them, but are not
// dense.
//
// Down migrations exist for each step; run them with the processes of the
// newer schema stopped. What each migration changed, and what processes
// older than it see, is in docs/design/migrations.md.
package migrations
