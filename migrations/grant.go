package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// ErrUnknownRole is returned (wrapped) by Grant, and by Migrate with
// WithAppRole, when the role to grant does not exist.
var ErrUnknownRole = errors.New("no such role")

// WithAppRole makes Migrate, once the schema is up to date, grant role
// what a running app needs (see Grant). Migrate must then run as the role
// that owns the tables.
func WithAppRole(role string) Option {
	return func(c *config) { c.appRole = role }
}

// Grant gives role exactly the privileges an app running dbpubsub on the
// message table needs, and no ownership and no CREATE, so that role can
// enqueue, dequeue, subscribe, list and re-queue dead letters, pause and
// claim inbox keys on every topic, those already used and those not yet:
//
//   - USAGE on the schema the tables live in;
//   - SELECT, INSERT, UPDATE and DELETE on the message table, the ready
//     table and every topic's ready table made so far (those made later
//     copy the ready table's grants), the subscriptions' tables and the
//     paused queues' table;
//   - SELECT on the registry of topics (ListTopics) and on the migrations
//     table (Migrate or Verify at start-up);
//   - USAGE on the id sequence;
//   - EXECUTE on the ready-table function, which PUBLIC still may not
//     call.
//
// It must run as the role that owns the tables (the one that ran the
// migrations), on an up-to-date schema; it is idempotent. It wraps
// ErrUnknownRole when role does not exist, ErrNotMigrated when the schema
// is not up to date. While it runs, no topic is used for the first time
// (a first use waits for it), so no topic's ready table misses the grants.
func Grant(ctx context.Context, db *bun.DB, role string, opts ...Option) error {
	c, err := newConfig(opts)
	if err != nil {
		return err
	}
	if db == nil {
		return errors.New("migrations: nil *bun.DB")
	}
	if err := Verify(ctx, db, opts...); err != nil {
		return fmt.Errorf("migrations: grant %q: %w", role, err)
	}
	return grant(ctx, db, role, c)
}

// grant runs the GRANT statements of Grant in one transaction.
func grant(ctx context.Context, db *bun.DB, role string, c config) (err error) {
	fail := func(err error) error {
		return fmt.Errorf("migrations: grant role %q the app's privileges on table %q: %w", role, c.table, err)
	}
	if role == "" {
		return fail(fmt.Errorf("empty role name: %w", ErrUnknownRole))
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var exists bool
	var schema sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1), current_schema()`,
		role).Scan(&exists, &schema); err != nil {
		return fail(err)
	}
	if !exists {
		return fail(ErrUnknownRole)
	}
	s := quoteIdent(schema.String)
	q := func(name string) string { return s + "." + quoteIdent(name) }
	// The registry's lock holds back every first use of a topic (the
	// ready-table function inserts into it) until the grants commit, so a
	// ready table made meanwhile copies them, and none is made unseen.
	stmts := []string{`LOCK TABLE ` + q(c.table+"_topics") + ` IN SHARE MODE`}
	r := quoteIdent(role)
	rw := []string{q(c.table), q(ReadyTable(c.table)), q(SubscriptionsTable(c.table)), q(FanoutTable(c.table)),
		q(InboxTable(c.table)), q(PausedTable(c.table))}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fail(err)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT format('%I.%I', n.nspname, k.relname)
		FROM pg_catalog.pg_inherits i
		JOIN pg_catalog.pg_class k ON k.oid = i.inhrelid
		JOIN pg_catalog.pg_namespace n ON n.oid = k.relnamespace
		WHERE i.inhparent = to_regclass($1) ORDER BY 1`, q(ReadyTable(c.table)))
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var child string
		if err := rows.Scan(&child); err != nil {
			rows.Close()
			return fail(err)
		}
		rw = append(rw, child)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	var seq sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT pg_catalog.pg_get_serial_sequence($1, 'id')`, q(c.table)).Scan(&seq); err != nil {
		return fail(err)
	}
	if !seq.Valid {
		return fail(fmt.Errorf("the message table has no id sequence: %w", ErrNotMigrated))
	}
	stmts = []string{
		`GRANT USAGE ON SCHEMA ` + s + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ` + strings.Join(rw, ", ") + ` TO ` + r,
		`GRANT SELECT ON ` + q(c.table+"_topics") + `, ` + q(MigrationsTable(c.table)) + ` TO ` + r,
		`GRANT USAGE ON SEQUENCE ` + seq.String + ` TO ` + r,
		`GRANT EXECUTE ON FUNCTION ` + q(ReadyTableFunc(c.table)) + `(text) TO ` + r,
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
