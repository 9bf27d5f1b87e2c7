package migrations

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// ErrNotEmpty is returned (wrapped) by Down when the down migration would
// run on a message table that keeps messages not finished (ready,
// scheduled, processing or dead), which it could make undeliverable after
// the migration is applied again; WithForceDown runs it anyway.
var ErrNotEmpty = errors.New("the message table keeps messages")

// refusedState is the SQLSTATE the guarded down migrations raise when they
// refuse to run (see ErrNotEmpty).
const refusedState = "CVD01"

// WithForceDown makes Down run a down migration even on a message table
// that keeps messages not finished; what becomes of them is in
// docs/design/migrations.md. Running the down SQL by hand, the session
// setting conveyor.force_down = on does the same.
func WithForceDown() Option {
	return func(c *config) { c.forceDown = true }
}

// Down reverts the newest applied migration of the message table, in one
// transaction with the record that it was applied, and returns its name
// ("" when none is applied). Run it with the processes that use the newer
// schema stopped.
//
// The down migrations that move or drop where messages are kept or what
// they hold (0001 drops the table, 0002 and 0003 move the ready rows,
// 0005 drops the subscriptions and the inbox, 0007 drops the headers)
// refuse to run while the message table keeps messages not finished:
// Down then changes nothing and returns an error wrapping ErrNotEmpty that
// says how many, unless WithForceDown is given. 0009 refuses likewise
// while a subscription has a retry policy of its own, which it drops. The
// others (0004, 0006, 0008) keep every message deliverable.
func Down(ctx context.Context, db *bun.DB, opts ...Option) (string, error) {
	c, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	if db == nil {
		return "", errors.New("migrations: nil *bun.DB")
	}
	m, err := newMigrator(db, c)
	if err != nil {
		return "", fmt.Errorf("migrations: %w", err)
	}
	unlock, err := lock(ctx, db.DB, c.table)
	if err != nil {
		return "", err
	}
	defer unlock()
	if st, err := readState(ctx, db, m, c); err != nil {
		return "", err
	} else if !st.migrationsTable {
		return "", nil
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return "", fmt.Errorf("migrations: read table %s: %w", MigrationsTable(c.table), err)
	}
	applied := ms.Applied()
	if len(applied) == 0 {
		return "", nil
	}
	last := applied[0]
	for _, a := range applied[1:] {
		if a.Name > last.Name {
			last = a
		}
	}
	name := last.Name + "_" + last.Comment
	text, err := files.ReadFile("sql/" + name + ".tx.down.sql")
	if err != nil {
		return "", fmt.Errorf("migrations: down migration of %s: %w", name, err)
	}
	var sqlText bytes.Buffer
	tmpl, err := template.New(name).Parse(string(text))
	if err == nil {
		err = tmpl.Execute(&sqlText, map[string]string{"Table": `"` + c.table + `"`, "Prefix": c.table})
	}
	if err != nil {
		return "", fmt.Errorf("migrations: down migration of %s: %w", name, err)
	}

	fail := func(err error) (string, error) {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == refusedState {
			return "", fmt.Errorf("migrations: down %s refused: %s: %w", name, pgErr.Message, ErrNotEmpty)
		}
		return "", fmt.Errorf("migrations: down %s: %w", name, err)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	if c.forceDown {
		if _, err := tx.ExecContext(ctx, `SET LOCAL conveyor.force_down = on`); err != nil {
			return fail(err)
		}
	}
	for _, stmt := range strings.Split(sqlText.String(), "--bun:split") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fail(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+quoteIdent(MigrationsTable(c.table))+` WHERE name = $1`, last.Name); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return name, nil
}
