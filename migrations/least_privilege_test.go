package migrations

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

// appRole creates a role for t with the grants the package documentation
// gives an app role, and SELECT on the migrations table (what Migrate
// reads to know the schema is up to date), but no CREATE on the schema.
// It returns a DB whose every session runs as that role.
func appRole(t *testing.T, dsn string, owner *bun.DB) *bun.DB {
	t.Helper()
	role := newRole(t, owner, "NOLOGIN")
	exec(t, owner,
		`GRANT USAGE ON SCHEMA `+pgtestSchema(t, owner)+` TO `+role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, jobs_ready, jobs_subscriptions, jobs_fanout, jobs_inbox, jobs_paused TO `+role,
		`GRANT USAGE ON SEQUENCE jobs_id_seq TO `+role,
		`GRANT EXECUTE ON FUNCTION jobs_ready_table(text) TO `+role,
		`GRANT SELECT ON jobs_migrations TO `+role,
	)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	sqldb := sql.OpenDB(stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `SET ROLE `+role)
		return err
	})))
	db := bun.NewDB(sqldb, pgdialect.New())
	// Closed before newRole's clean-up drops the role.
	t.Cleanup(func() { _ = db.Close() })
	var create bool
	if err := db.QueryRowContext(context.Background(),
		`SELECT has_schema_privilege(current_schema(), 'CREATE')`).Scan(&create); err != nil || create {
		t.Fatalf("the app role has CREATE on the schema: %v, %v; the test shows nothing", create, err)
	}
	return db
}

// An app that runs Migrate at every start-up, as a role that may use the
// tables but not create any (PostgreSQL 15's default on public), starts
// when the schema is up to date, and the role leaves nothing behind.
func TestMigrateUpToDateWithoutCreate(t *testing.T) {
	ctx := context.Background()
	dsn, owner := pgtest.NewSchema(t)
	if err := Migrate(ctx, owner, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	before := count(t, owner, `SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace`)
	app := appRole(t, dsn, owner)

	for i := range 2 {
		if err := Migrate(ctx, app, WithTable("jobs")); err != nil {
			t.Fatalf("Migrate #%d of an up-to-date schema as a role without CREATE: %v", i+1, err)
		}
	}
	if err := Verify(ctx, app, WithTable("jobs")); err != nil {
		t.Fatalf("Verify as the app role: %v", err)
	}
	if n := count(t, owner, `SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace`); n != before {
		t.Fatalf("Migrate of an up-to-date schema changed the number of relations from %d to %d", before, n)
	}
}

// With a migration missing, Migrate as a role without CREATE fails,
// saying what is missing and why the role cannot apply it, and the error
// wraps ErrNotMigrated.
func TestMigrateBehindWithoutCreate(t *testing.T) {
	ctx := context.Background()
	dsn, owner := pgtest.NewSchema(t)
	if err := Migrate(ctx, owner, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	app := appRole(t, dsn, owner)
	runFile(t, owner, "0006_ready_table_privileges.tx.down.sql")
	exec(t, owner, `DELETE FROM jobs_migrations WHERE name = '0006'`)

	err := Migrate(ctx, app, WithTable("jobs"))
	if err == nil {
		t.Fatal("Migrate with a migration missing, as a role without CREATE, succeeded")
	}
	if !errors.Is(err, ErrNotMigrated) {
		t.Errorf("error %v does not wrap ErrNotMigrated", err)
	}
	for _, want := range []string{"0006_ready_table_privileges", "CREATE", pgtestSchema(t, owner)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := count(t, owner, `SELECT count(*) FROM jobs_migrations WHERE name = '0006'`); n != 0 {
		t.Errorf("0006 recorded as applied after the failed Migrate")
	}
	// The owner can still bring it up to date, and then the app role starts.
	if err := Migrate(ctx, owner, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, app, WithTable("jobs")); err != nil {
		t.Fatalf("Migrate as the app role after the owner migrated: %v", err)
	}
}

// A role that may not read the migrations table is told so, not that it
// lacks CREATE.
func TestMigrateCannotReadMigrations(t *testing.T) {
	ctx := context.Background()
	dsn, owner := pgtest.NewSchema(t)
	if err := Migrate(ctx, owner, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	app := appRole(t, dsn, owner)
	var role string
	if err := app.QueryRowContext(ctx, `SELECT current_user`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	exec(t, owner, `REVOKE SELECT ON jobs_migrations FROM `+role)
	err := Migrate(ctx, app, WithTable("jobs"))
	if err == nil || !strings.Contains(err.Error(), "SELECT on jobs_migrations") {
		t.Fatalf("Migrate as a role that cannot read jobs_migrations: %v, want an error naming the grant", err)
	}
}
