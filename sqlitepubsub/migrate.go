package sqlitepubsub

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

//go:embed sql/*.sql
var migrationFiles embed.FS

// migration is one step of the schema, sql/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the steps of the schema, in order.
func migrations() []migration {
	names, err := fs.Glob(migrationFiles, "sql/*.sql")
	if err != nil {
		panic(err)
	}
	out := make([]migration, 0, len(names))
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "sql/"), ".sql")
		v, err := strconv.Atoi(base[:4])
		if err != nil {
			panic(fmt.Sprintf("sqlitepubsub: migration %s: %v", n, err))
		}
		b, _ := migrationFiles.ReadFile(n)
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	return out
}

// SchemaVersion is the version of the schema this package makes and
// reads: its last migration.
var SchemaVersion = migrations()[len(migrations())-1].version

// Migrate creates sqlitepubsub's tables in db, or brings them up to
// SchemaVersion, in one immediate transaction: the file's write lock is
// the lock between processes migrating at once, and the second finds the
// work done. A PubSub migrates on its first call; Migrate does it ahead.
// It wraps ErrForeignSchema when the file has tables named as the
// package's that it did not make, or a newer schema; ErrNotDatabase,
// ErrReadOnly, ErrBusy (when ctx ends while another connection holds the
// lock) as their causes.
func Migrate(ctx context.Context, db *bun.DB) error {
	if db == nil {
		return fmt.Errorf("%w: Migrate: nil *bun.DB", ErrInvalidOptions)
	}
	return retryBusy(ctx, func() error { return migrate(ctx, db.DB) })
}

// Verify checks, without changing the file, that db has this package's
// tables at SchemaVersion: an error wrapping ErrNotMigrated when it has
// none or older ones, ErrForeignSchema when they are not the package's
// or newer. An operator's tool calls it before it looks at a file, so that
// it never makes tables in a file it was wrongly pointed at.
func Verify(ctx context.Context, db *bun.DB) error {
	if db == nil {
		return fmt.Errorf("%w: Verify: nil *bun.DB", ErrInvalidOptions)
	}
	return retryBusy(ctx, func() error {
		var have int
		err := db.DB.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'conveyor_migrations'`).Scan(&have)
		if err != nil {
			return err
		}
		if have == 0 {
			return fmt.Errorf("%w: the file has no conveyor_migrations table", ErrNotMigrated)
		}
		var version int
		if err := db.DB.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM conveyor_migrations`).Scan(&version); err != nil {
			return err
		}
		switch {
		case version > SchemaVersion:
			return fmt.Errorf("%w: the file's schema is version %d, this package knows up to %d", ErrForeignSchema, version, SchemaVersion)
		case version < SchemaVersion:
			return fmt.Errorf("%w: the file's schema is version %d, want %d", ErrNotMigrated, version, SchemaVersion)
		}
		return nil
	})
}

// migrate runs the migrations db lacks in one immediate transaction.
func migrate(ctx context.Context, db *sql.DB) (err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return classify(ctx, err)
	}
	defer c.Close()
	return immediate(ctx, c, func() error {
		_, err := migrateIn(ctx, c)
		return err
	})
}

// conn is a connection or a transaction.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// migrateIn runs the migrations c lacks, in c's transaction, and reports
// whether it ran any.
func migrateIn(ctx context.Context, c conn) (ran bool, err error) {
	err = func() error {
		var have int
		err := c.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'conveyor_migrations'`).Scan(&have)
		if err != nil {
			return err
		}
		version := 0
		if have == 0 {
			var foreign string
			err := c.QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'conveyor\_%' ESCAPE '\' LIMIT 1`).Scan(&foreign)
			switch {
			case err == nil:
				return fmt.Errorf("%w: table %s exists and conveyor_migrations does not", ErrForeignSchema, foreign)
			case err != sql.ErrNoRows:
				return err
			}
			if _, err := c.ExecContext(ctx, `CREATE TABLE conveyor_migrations (
				version    INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at INTEGER NOT NULL
			)`); err != nil {
				return err
			}
		} else if err := c.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM conveyor_migrations`).Scan(&version); err != nil {
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("%w: the file's schema is version %d, this package knows up to %d (a newer sqlitepubsub migrated it)", ErrForeignSchema, version, SchemaVersion)
		}
		for _, m := range migrations() {
			if m.version <= version {
				continue
			}
			ran = true
			if _, err := c.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := c.ExecContext(ctx, `INSERT INTO conveyor_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, time.Now().UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	}()
	return ran, err
}

// immediate runs f in a transaction begun with BEGIN IMMEDIATE on c: it
// holds the file's write lock from its start, so that none of its reads
// is made stale by another writer. f's error rolls it back. COMMIT runs
// even if ctx ended during f: holding the lock, it waits on no one, and
// one cut short could be made and reported as failed.
func immediate(ctx context.Context, c *sql.Conn, f func() error) error {
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err := f()
	if err == nil {
		_, err = c.ExecContext(context.WithoutCancel(ctx), "COMMIT")
	}
	if err != nil {
		// ROLLBACK fails harmlessly when SQLite rolled back already (an
		// interrupt); it must run even when ctx has ended.
		_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// retryBusy runs f until it succeeds, fails with another error than
// SQLITE_BUSY, or ctx ends. SQLite waits for the lock itself (the
// connection's busy_timeout; modernc ends that wait with ctx): the short
// pause here only keeps a connection without one from spinning.
func retryBusy(ctx context.Context, f func() error) error {
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := f()
		if err == nil || !isBusy(err) || ctx.Err() != nil {
			return classify(ctx, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return classify(ctx, err)
		case <-t.C:
		}
	}
}
