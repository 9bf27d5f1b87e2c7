package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, sqlitepubsub's
)

// The baseline of the SQLite systems: a minimal hand-written queue on
// modernc.org/sqlite (the driver sqlitepubsub uses), as the SQLite docs
// suggest writing one: one connection (SQLite has one writer), WAL,
// synchronous=FULL as sqlitepubsub's default; each statement its own
// transaction: INSERT; claim with UPDATE … RETURNING of the oldest ready
// row; handle; DELETE. Polls when empty.
type sqliteLoop struct{}

func init() { register(sqliteLoop{}) }

const sqliteLoopPoll = 10 * time.Millisecond

func (sqliteLoop) Name() string   { return "baseline: SQLite loop" }
func (sqliteLoop) Kind() Kind     { return KindSQLite }
func (sqliteLoop) Baseline() bool { return true }
func (sqliteLoop) Config(Config) string {
	return fmt.Sprintf("modernc.org/sqlite, database/sql with 1 connection, WAL, synchronous=FULL, busy_timeout 5 s; "+
		"table (id INTEGER PRIMARY KEY, state, lease, data BLOB), index (state, id); enqueue: one INSERT; batch: one transaction of INSERTs; "+
		"consume: UPDATE … SET state = 1 WHERE id = (SELECT … ORDER BY id LIMIT 1) RETURNING id, data; DELETE (each its own "+
		"transaction); polls every %v when empty; a fresh file per run, removed after", sqliteLoopPoll)
}

type sqliteLoopInstance struct {
	dir string
	db  *sql.DB
}

// openSQLite opens path with the pragmas every SQLite system here uses:
// WAL, synchronous FULL, busy timeout 5 s.
func openSQLite(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "synchronous(FULL)")
	return sql.Open("sqlite", path+"?"+q.Encode())
}

func (sqliteLoop) Open(ctx context.Context, _ *Env, _ Config) (Instance, error) {
	dir, err := sqliteDir()
	if err != nil {
		return nil, err
	}
	in := &sqliteLoopInstance{dir: dir}
	if in.db, err = openSQLite(filepath.Join(dir, "loop.db")); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	in.db.SetMaxOpenConns(1)
	if _, err := in.db.ExecContext(ctx, `CREATE TABLE q (id INTEGER PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0,
		lease INTEGER NOT NULL DEFAULT 0, data BLOB NOT NULL); CREATE INDEX q_ready ON q (state, id)`); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

func (in *sqliteLoopInstance) Enqueue(ctx context.Context, m Msg) error {
	_, err := in.db.ExecContext(ctx, `INSERT INTO q (data) VALUES (?)`, payload(m))
	return err
}

func (in *sqliteLoopInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	tx, err := in.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `INSERT INTO q (data) VALUES (?)`)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if _, err := st.ExecContext(ctx, payload(m)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (in *sqliteLoopInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return startWorkers(ctx, workers, func(ctx context.Context) error {
		for {
			got, err := in.one(ctx, handle)
			if err != nil {
				return err
			}
			if got {
				done()
				continue
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(sqliteLoopPoll):
			}
		}
	}), nil
}

// one claims, handles and deletes one message, and reports whether there
// was one.
func (in *sqliteLoopInstance) one(ctx context.Context, handle func(Msg)) (bool, error) {
	var id int64
	var data []byte
	err := in.db.QueryRowContext(ctx, `UPDATE q SET state = 1, lease = ? WHERE id = (
		SELECT id FROM q WHERE state = 0 ORDER BY id LIMIT 1) RETURNING id, data`, time.Now().Add(30*time.Second).UnixMicro()).Scan(&id, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	handle(parsePayload(data))
	_, err = in.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM q WHERE id = ?`, id)
	return err == nil, err
}

func (in *sqliteLoopInstance) Close() error {
	var errs []error
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	return errors.Join(append(errs, os.RemoveAll(in.dir))...)
}
