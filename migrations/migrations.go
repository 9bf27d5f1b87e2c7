package migrations

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// DefaultTable is the name of the message table unless configured otherwise.
const DefaultTable = "conveyor_events"

// MaxTableLen is the longest table name accepted, in bytes, so that the
// names derived from it (indexes, the migrations table) stay within
// PostgreSQL's 63-byte identifiers.
const MaxTableLen = 40

// Command is what to run to bring a database's schema up to date, for
// error messages and operators.
const Command = "go run github.com/conveyorgo/conveyor/dbpubsub/cmd/conveyor-migrate -dsn \"$DATABASE_URL\""

// ErrNotMigrated is returned (wrapped) by Verify, and by dbpubsub, when the
// schema is missing or behind the migrations embedded in this package.
var ErrNotMigrated = errors.New("schema not migrated")

//go:embed sql/*.sql
var files embed.FS

// Option configures Migrate and Verify.
type Option func(*config)

type config struct {
	table string
}

// WithTable sets the message table's name (DefaultTable if not given). It
// must match dbpubsub's Options.Table.
func WithTable(name string) Option {
	return func(c *config) { c.table = name }
}

var tableRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ValidateTable reports whether name can name the message table: 1 to
// MaxTableLen bytes of lower-case ASCII letters, digits and underscores,
// not starting with a digit. The table lives in the first schema of the
// connection's search_path.
func ValidateTable(name string) error {
	switch {
	case name == "":
		return errors.New("empty table name")
	case len(name) > MaxTableLen:
		return fmt.Errorf("table name %q is %d bytes, the limit is %d", name, len(name), MaxTableLen)
	case !tableRE.MatchString(name):
		return fmt.Errorf("table name %q: want lower-case letters, digits and underscores, not starting with a digit", name)
	}
	return nil
}

// MigrationsTable is the name of the table where the migrations applied to
// the message table named table are recorded. It is separate from an app's
// own migrations table, so both can use bun's migrate.
func MigrationsTable(table string) string { return table + "_migrations" }

// ReadyTable is the name of the table beside the message table named
// table where messages for delivery at once wait until their first claim
// (migration 0002). Since migration 0003 each topic's rows are in a child
// table of its own (see ReadyTableFunc); reading ReadyTable reads them
// all.
func ReadyTable(table string) string { return table + "_ready" }

// ReadyTableFunc is the name of the SQL function that returns the
// schema-qualified, quoted name of a topic's own ready table, a child of
// ReadyTable(table), creating it on first use (migration 0003). It runs
// with the rights of the role that ran the migrations; since migration
// 0006 only the roles granted EXECUTE on it may call it (see the package
// documentation).
func ReadyTableFunc(table string) string { return table + "_ready_table" }

// SubscriptionsTable is the name of the table of the named subscriptions
// of the topics of the message table named table (migration 0005).
func SubscriptionsTable(table string) string { return table + "_subscriptions" }

// FanoutTable is the name of the table that counts the changes of each
// topic's subscriptions (migration 0005).
func FanoutTable(table string) string { return table + "_fanout" }

// InboxTable is the name of the table of the keys claimed by consumers
// (pubsub.Inbox; migration 0005).
func InboxTable(table string) string { return table + "_inbox" }

// AllView is the name of the view that shows every message of the message
// table named table, wherever it is stored, in the message table's columns
// (migration 0002).
func AllView(table string) string { return table + "_all" }

func newConfig(opts []Option) (config, error) {
	c := config{table: DefaultTable}
	for _, o := range opts {
		o(&c)
	}
	if err := ValidateTable(c.table); err != nil {
		return c, fmt.Errorf("migrations: %w", err)
	}
	return c, nil
}

func newMigrator(db *bun.DB, c config) (*migrate.Migrator, error) {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return nil, err
	}
	return migrate.NewMigrator(db, ms,
		migrate.WithTableName(MigrationsTable(c.table)),
		migrate.WithLocksTableName(c.table+"_migration_locks"),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTemplateData(map[string]string{
			"Table":  `"` + c.table + `"`,
			"Prefix": c.table,
		}),
	), nil
}

// Migrate brings the schema of db up to date: it creates the message table
// and its indexes in the first schema of db's search_path, or applies the
// migrations it lacks. Each migration runs in a transaction and is recorded
// as applied only when it succeeded. Concurrent calls (several services
// starting at once) are serialised with a PostgreSQL advisory lock, so it
// is safe to call at every start-up.
func Migrate(ctx context.Context, db *bun.DB, opts ...Option) error {
	c, err := newConfig(opts)
	if err != nil {
		return err
	}
	if db == nil {
		return errors.New("migrations: nil *bun.DB")
	}
	m, err := newMigrator(db, c)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	unlock, err := lock(ctx, db.DB, c.table)
	if err != nil {
		return err
	}
	defer unlock()
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrations: create table %s: %w", MigrationsTable(c.table), err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrations: migrate table %q: %w", c.table, err)
	}
	return nil
}

// lock takes the advisory lock of table's migrations on a connection of its
// own and returns the function that releases it.
func lock(ctx context.Context, db *sql.DB, table string) (func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: connect: %w", err)
	}
	const q = `SELECT pg_advisory_lock(hashtextextended(current_schema() || '.' || $1, 0))`
	if _, err := conn.ExecContext(ctx, q, MigrationsTable(table)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrations: take advisory lock: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		const q = `SELECT pg_advisory_unlock(hashtextextended(current_schema() || '.' || $1, 0))`
		if _, err := conn.ExecContext(ctx, q, MigrationsTable(table)); err != nil {
			// Closing the session below releases the lock all the same.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}

// Verify reports, in plain words, whether db's schema is ready for dbpubsub:
// it returns an error wrapping ErrNotMigrated that names what to run when
// the message table is missing or some migration is not applied, and other
// errors when it cannot tell (the database is unreachable). Call it at
// start-up in services that do not run Migrate themselves.
func Verify(ctx context.Context, db *bun.DB, opts ...Option) error {
	c, err := newConfig(opts)
	if err != nil {
		return err
	}
	if db == nil {
		return errors.New("migrations: nil *bun.DB")
	}
	m, err := newMigrator(db, c)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	var exists bool
	if err := db.DB.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`,
		`"`+c.table+`"`, `"`+MigrationsTable(c.table)+`"`).Scan(&exists); err != nil {
		return fmt.Errorf("migrations: verify table %q: %w", c.table, err)
	}
	if !exists {
		return NotMigratedError(c.table, "is missing")
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return fmt.Errorf("migrations: verify table %q: %w", c.table, err)
	}
	if un := ms.Unapplied(); len(un) > 0 {
		names := make([]string, len(un))
		for i, u := range un {
			names[i] = u.Name + "_" + u.Comment
		}
		return NotMigratedError(c.table, "lacks migrations "+strings.Join(names, ", "))
	}
	return nil
}

// NotMigratedError returns the error, wrapping ErrNotMigrated, that says the
// message table named table what (for example "is missing") and what to run.
func NotMigratedError(table, what string) error {
	call, cmd := "migrations.Migrate(ctx, db)", Command
	if table != DefaultTable {
		call = fmt.Sprintf("migrations.Migrate(ctx, db, migrations.WithTable(%q))", table)
		cmd += " -table " + table
	}
	return fmt.Errorf("migrations: the message table %q %s in the first schema of the search_path: "+
		"run %s at start-up, or %s: %w", table, what, call, cmd, ErrNotMigrated)
}
