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
	table     string
	appRole   string // WithAppRole: the role to grant once up to date
	forceDown bool   // WithForceDown
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

// PausedTable is the name of the table of the paused queues
// (admin.Pauser; migration 0008).
func PausedTable(table string) string { return table + "_paused" }

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
//
// Migrate first reads, without changing anything, which migrations the
// migrations table records as applied; when none is missing it returns
// at once. So an app whose role may use the tables but not create any (no
// CREATE on the schema) can call it at every start-up: it needs, besides
// the grants the package documentation lists, SELECT on the migrations
// table (MigrationsTable). When something is missing and the role lacks
// CREATE on the schema, Migrate changes nothing and returns an error
// wrapping ErrNotMigrated that names what is missing.
//
// With WithAppRole, Migrate then grants that role what a running app needs
// (Grant), even when nothing was missing.
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
	if err := applyMissing(ctx, db, m, c); err != nil || c.appRole == "" {
		return err
	}
	return grant(ctx, db, c.appRole, c)
}

// applyMissing applies the migrations m lacks, if any, under the advisory lock.
func applyMissing(ctx context.Context, db *bun.DB, m *migrate.Migrator, c config) error {
	if st, err := readState(ctx, db, m, c); err != nil || st.upToDate() {
		return err
	}
	unlock, err := lock(ctx, db.DB, c.table)
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have migrated while this one waited for the lock.
	st, err := readState(ctx, db, m, c)
	if err != nil || st.upToDate() {
		return err
	}
	if err := st.canApply(c.table); err != nil {
		return err
	}
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrations: create table %s: %w", MigrationsTable(c.table), err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrations: migrate table %q: %w", c.table, err)
	}
	return nil
}

// state is what the schema has of the migrations, read without changing
// anything.
type state struct {
	table, migrationsTable bool     // the message table and the migrations table exist
	unapplied              []string // the embedded migrations not recorded as applied
	role, schema           string   // current_user and current_schema() ("" if none)
	canCreate              bool     // the role has CREATE on the schema
}

func (s state) upToDate() bool { return s.table && s.migrationsTable && len(s.unapplied) == 0 }

// what says, for an error, what the message table lacks.
func (s state) what() string {
	if !s.table || !s.migrationsTable {
		return "is missing"
	}
	return "lacks migrations " + strings.Join(s.unapplied, ", ")
}

// canApply returns the error that says the role cannot bring the schema up
// to date, when it lacks CREATE on the schema the tables live in.
func (s state) canApply(table string) error {
	if s.canCreate || s.schema == "" {
		return nil // when there is no schema, bun's error says so
	}
	cmd := Command
	if table != DefaultTable {
		cmd += " -table " + table
	}
	return fmt.Errorf("migrations: the message table %q %s in schema %q, and role %q has no CREATE "+
		"on that schema to migrate it: run Migrate as the role that owns the tables, or %s: %w",
		table, s.what(), s.schema, s.role, cmd, ErrNotMigrated)
}

// readState reads what the schema has of the migrations; it only reads.
func readState(ctx context.Context, db *bun.DB, m *migrate.Migrator, c config) (state, error) {
	var (
		st      state
		schema  sql.NullString
		canRead bool
	)
	mt := `"` + MigrationsTable(c.table) + `"`
	const q = `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
		coalesce(has_table_privilege(to_regclass($2), 'SELECT'), false),
		current_user, current_schema(), coalesce(has_schema_privilege(current_schema(), 'CREATE'), false)`
	if err := db.DB.QueryRowContext(ctx, q, `"`+c.table+`"`, mt).Scan(
		&st.table, &st.migrationsTable, &canRead, &st.role, &schema, &st.canCreate); err != nil {
		return st, fmt.Errorf("migrations: read the state of table %q: %w", c.table, err)
	}
	st.schema = schema.String
	if !st.migrationsTable {
		return st, nil
	}
	if !canRead {
		return st, fmt.Errorf("migrations: role %q may not read %s, so it cannot tell whether the schema is up to date: "+
			"grant it SELECT on %s, or migrate as the role that owns the tables", st.role, mt, MigrationsTable(c.table))
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return st, fmt.Errorf("migrations: read table %s: %w", MigrationsTable(c.table), err)
	}
	for _, u := range ms.Unapplied() {
		st.unapplied = append(st.unapplied, u.Name+"_"+u.Comment)
	}
	return st, nil
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
	st, err := readState(ctx, db, m, c)
	if err != nil {
		return err
	}
	if !st.upToDate() {
		return NotMigratedError(c.table, st.what())
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
