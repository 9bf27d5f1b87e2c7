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
// <table>_inbox, and the paused queues' <table>_paused.
//
// An app may run as a role that owns nothing and may create nothing, the
// migrations being run by the role that owns the tables. Grant, or Migrate
// with WithAppRole run by the owner, gives that role exactly what a
// running app needs:
//
//	err := migrations.Migrate(ctx, ownerDB, migrations.WithAppRole("app"))
//
// or from a shell, as the owner: conveyor migrate --grant app. That is
// USAGE on the tables' schema; SELECT, INSERT, UPDATE and DELETE on
// <table>, <table>_ready and every topic's ready table made so far, the
// three subscriptions' tables and <table>_paused; SELECT on the registry
// <table>_topics (ListTopics) and on <table>_migrations (Migrate or Verify
// at start-up: on an up-to-date schema Migrate only reads it); USAGE on
// <table>_id_seq; and EXECUTE on the ready-table function, which runs with
// the rights of the role that ran the migrations and which PUBLIC may not
// call. A topic's ready table made later copies the grants of
// <table>_ready. Granting by hand needs all of these: a topic's ready
// table made before the grant on <table>_ready does not get it, and
// without EXECUTE the first use of a topic fails with "permission denied
// for function conveyor_events_ready_table". Migration 0006 granted EXECUTE
// to the roles that held privileges on <table> or <table>_ready then. The
// function's search_path is its own schema, then pg_temp, so nothing a
// caller creates changes what it does.
//
// Each nextval of the id sequence reserves a block of 1024 ids: ids are
// unique and increase in the order statements take them, but are not
// dense.
//
// Down migrations exist for each step; run them with the processes of the
// newer schema stopped. Down reverts the newest applied one (conveyor
// migrate --down from a shell). Those that move or drop where messages are
// kept or what they hold (0001, 0002, 0003, 0005, 0007) refuse while the
// message table keeps a message not finished (ready, scheduled, processing
// or dead), so that no message is made undeliverable: Down then wraps
// ErrNotEmpty, and changes nothing; WithForceDown (or, running the SQL by
// hand, the session setting conveyor.force_down = on) runs them anyway.
// The others (0004, 0006, 0008) keep every message deliverable once the
// schema is up again. What each migration changed, and what processes
// older than it see, is in docs/design/migrations.md.
package migrations
