package main

import (
	"flag"

	"github.com/conveyorgo/conveyor/migrations"
)

var migrateCmd = &opsCommand{
	name:    "migrate",
	summary: "create or update dbpubsub's tables (PostgreSQL)",
	help: `Brings the PostgreSQL schema up to date for dbpubsub: creates the message
table (--table) or applies the migrations it lacks, in the first schema of
the connection's search_path. Safe while apps start: concurrent runs are
serialised. The same as migrations.Migrate(ctx, db) in an app.

  -grant ROLE   then grant ROLE exactly what an app running dbpubsub needs
                (migrations.Grant): run as the role that owns the tables, so
                that the app can run as ROLE, owning nothing
  -down         instead, revert the newest applied migration (migrations.Down),
                with the apps stopped; one that could make waiting messages
                undeliverable refuses while the table keeps any (exit 4)
  -force        with -down: revert it anyway
`,
	flags: func(fs *flag.FlagSet) {
		fs.String("grant", "", "")
		fs.Bool("down", false, "")
		fs.Bool("force", false, "")
	},
	run: runMigrate,
}

func runMigrate(c *opsCall) error {
	opts := []migrations.Option{migrations.WithTable(c.table)}
	if c.flag("down") == "true" {
		if c.flag("grant") != "" {
			return usageErrorf("--grant and --down do not go together")
		}
		if c.flag("force") == "true" {
			opts = append(opts, migrations.WithForceDown())
		}
		name, err := migrations.Down(c.ctx, c.db, opts...)
		if err != nil {
			return err
		}
		if name == "" {
			return c.done(map[string]any{"table": c.table, "reverted": nil}, "Table %q has no migration applied.\n", c.table)
		}
		return c.done(map[string]any{"table": c.table, "reverted": name}, "Table %q: reverted %s.\n", c.table, name)
	}
	if c.flag("force") == "true" {
		return usageErrorf("--force goes with --down only")
	}
	role := c.flag("grant")
	if role != "" {
		opts = append(opts, migrations.WithAppRole(role))
	}
	if err := migrations.Migrate(c.ctx, c.db, opts...); err != nil {
		return err
	}
	if role != "" {
		return c.done(map[string]any{"table": c.table, "up_to_date": true, "granted": role},
			"Table %q is up to date; role %q may run an app on it.\n", c.table, role)
	}
	return c.done(map[string]any{"table": c.table, "up_to_date": true}, "Table %q is up to date.\n", c.table)
}
