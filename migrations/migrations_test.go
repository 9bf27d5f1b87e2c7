package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/migrate"
	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tableExists(t *testing.T, db *bun.DB, name string) bool {
	t.Helper()
	var ok bool
	if err := db.DB.QueryRowContext(context.Background(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestMigrateThenVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)

	err := migrations.Verify(ctx, db)
	if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "migrations.Migrate(ctx, db)") {
		t.Fatalf("Verify before Migrate: %v, want ErrNotMigrated naming migrations.Migrate", err)
	}
	for i := range 2 { // the second run has nothing to do
		if err := migrations.Migrate(ctx, db); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	if err := migrations.Verify(ctx, db); err != nil {
		t.Fatalf("Verify after Migrate: %v", err)
	}
	if !tableExists(t, db, migrations.DefaultTable) || !tableExists(t, db, migrations.MigrationsTable(migrations.DefaultTable)) {
		t.Fatal("Migrate did not create the message table and its migrations table")
	}

	// A schema behind the embedded migrations is reported too.
	if _, err := db.ExecContext(ctx, "DELETE FROM "+migrations.MigrationsTable(migrations.DefaultTable)); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Verify(ctx, db); !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "lacks migrations") {
		t.Fatalf("Verify with a migration missing: %v, want ErrNotMigrated saying what lacks", err)
	}
}

func TestConcurrentStartUps(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.NewSchema(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		sqldb, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := bun.NewDB(sqldb, pgdialect.New())
		t.Cleanup(func() { _ = db.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- migrations.Migrate(context.Background(), db)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
}

func TestFailedMigrationIsNotMarkedApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	// A table in the way makes the first migration fail.
	if _, err := db.ExecContext(ctx, "CREATE TABLE conveyor_events (x int)"); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Migrate(ctx, db); err == nil {
		t.Fatal("Migrate over a conflicting table: no error")
	}
	if err := migrations.Verify(ctx, db); !errors.Is(err, migrations.ErrNotMigrated) {
		t.Fatalf("Verify after a failed Migrate: %v, want ErrNotMigrated", err)
	}
	if _, err := db.ExecContext(ctx, "DROP TABLE conveyor_events"); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatalf("Migrate once the way is clear: %v", err)
	}
	if err := migrations.Verify(ctx, db); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// An app's own bun migrations, in bun's default tables, are not mixed with
// ours, although both number their first migration 1.
func TestCoexistsWithAppMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	app := migrate.NewMigrations()
	if err := app.Discover(fstest.MapFS{
		"0001_app_users.up.sql": {Data: []byte("CREATE TABLE users (id int)")},
	}); err != nil {
		t.Fatal(err)
	}
	appMigrator := migrate.NewMigrator(db, app)
	if err := appMigrator.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := appMigrator.Migrate(ctx); err != nil {
		t.Fatalf("app migrations: %v", err)
	}
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatalf("Migrate after the app's migrations: %v", err)
	}
	if !tableExists(t, db, "users") || !tableExists(t, db, migrations.DefaultTable) {
		t.Fatal("both the app's and the library's tables must exist")
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM bun_migrations").Scan(&n); err != nil || n != 1 {
		t.Fatalf("bun_migrations holds %d rows (%v), want only the app's one", n, err)
	}
}

func TestTableNameValidated(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Upper", "1abc", `x"; DROP TABLE y; --`, strings.Repeat("a", migrations.MaxTableLen+1)} {
		if err := migrations.ValidateTable(name); err == nil {
			t.Errorf("ValidateTable(%q): no error", name)
		}
		if err := migrations.Migrate(context.Background(), nil, migrations.WithTable(name)); err == nil {
			t.Errorf("Migrate with table %q: no error", name)
		}
	}
	for _, name := range []string{"conveyor_events", "jobs", "_x1"} {
		if err := migrations.ValidateTable(name); err != nil {
			t.Errorf("ValidateTable(%q): %v", name, err)
		}
	}
}
