package main

import (
	"github.com/conveyorgo/conveyor/migrations"
)

var migrateCmd = &opsCommand{
	name:    "migrate",
	summary: "create or update dbpubsub's tables (PostgreSQL)",
	help: `Brings the PostgreSQL schema up to date for dbpubsub: creates the message
table (--table) or applies the migrations it lacks, in the first schema of
the connection's search_path. Safe while apps start: concurrent runs are
serialised. The same as migrations.Migrate(ctx, db) in an app.
`,
	run: runMigrate,
}

func runMigrate(c *opsCall) error {
	if err := migrations.Migrate(c.ctx, c.db, migrations.WithTable(c.table)); err != nil {
		return err
	}
	return c.done(map[string]any{"table": c.table, "up_to_date": true}, "Table %q is up to date.\n", c.table)
}
