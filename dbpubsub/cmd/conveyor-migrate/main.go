// Command conveyor-migrate brings a PostgreSQL schema up to date for
// dbpubsub: it creates the message table, or applies the migrations it
// lacks, in the first schema of the connection's search_path.
//
//	go run github.com/conveyorgo/conveyor/dbpubsub/cmd/conveyor-migrate -dsn "$DATABASE_URL"
//	go run github.com/conveyorgo/conveyor/dbpubsub/cmd/conveyor-migrate -dsn "$DATABASE_URL" -verify
//
// It is the same as calling migrations.Migrate(ctx, db) at start-up, and
// safe to run while services start: concurrent runs are serialised.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/migrations"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL DSN (default $DATABASE_URL)")
	table := flag.String("table", migrations.DefaultTable, "message table (dbpubsub Options.Table)")
	verify := flag.Bool("verify", false, "only check that the schema is up to date; exit 1 if not")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*dsn, *table, *verify, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "conveyor-migrate:", err)
		os.Exit(1)
	}
}

func run(dsn, table string, verify bool, timeout time.Duration) error {
	if dsn == "" {
		return fmt.Errorf("no DSN: pass -dsn or set DATABASE_URL")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if verify {
		if err := migrations.Verify(ctx, db, migrations.WithTable(table)); err != nil {
			return err
		}
		fmt.Printf("table %q is up to date\n", table)
		return nil
	}
	if err := migrations.Migrate(ctx, db, migrations.WithTable(table)); err != nil {
		return err
	}
	fmt.Printf("table %q is up to date\n", table)
	return nil
}
