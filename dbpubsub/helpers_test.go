package dbpubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
)

// newStore returns a fresh migrated schema: its DSN and a DB on it.
func newStore(t testing.TB) (string, *bun.DB) {
	t.Helper()
	dsn, db := pgtest.NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatalf("migrations.Migrate: %v", err)
	}
	return dsn, db
}

// newPubSub returns a PubSub on db, closed in t.Cleanup.
func newPubSub(t testing.TB, db *bun.DB, opts dbpubsub.Options) *dbpubsub.PubSub {
	t.Helper()
	ps, err := dbpubsub.New(db, opts)
	if err != nil {
		t.Fatalf("dbpubsub.New: %v", err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// openDB opens another DB on dsn, as another process would, closed in
// t.Cleanup.
func openDB(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		t.Fatalf("dbpubsub.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
