package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The baseline of the PostgreSQL systems: a minimal hand-written queue on
// pgx, one row per transaction (BEGIN; SELECT … FOR UPDATE SKIP LOCKED
// LIMIT 1; handle; DELETE; COMMIT), polling when empty.
type skipLocked struct{}

func init() { register(skipLocked{}) }

const skipLockedPoll = 10 * time.Millisecond

func (skipLocked) Name() string   { return "baseline: SKIP LOCKED loop" }
func (skipLocked) Kind() Kind     { return KindPostgres }
func (skipLocked) Baseline() bool { return true }
func (skipLocked) Config(cfg Config) string {
	return fmt.Sprintf("pgx v5 pgxpool of %d conns; table (id bigserial PK, data bytea); enqueue: one INSERT; "+
		"batch: INSERT … SELECT unnest($1::bytea[]); consume: one row per transaction "+
		"(SELECT … ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED, DELETE, COMMIT); polls every %v when empty",
		cfg.PoolSize, skipLockedPoll)
}

type skipLockedInstance struct {
	schema *Schema
	pool   *pgxpool.Pool
}

func (skipLocked) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	schema, err := env.NewSchema(ctx, "skiplocked")
	if err != nil {
		return nil, err
	}
	in := &skipLockedInstance{schema: schema}
	pcfg, err := pgxpool.ParseConfig(schema.DSN)
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	pcfg.MaxConns = int32(cfg.PoolSize)
	if in.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if _, err := in.pool.Exec(ctx, `CREATE TABLE queue (id bigserial PRIMARY KEY, data bytea NOT NULL)`); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

func (in *skipLockedInstance) Enqueue(ctx context.Context, m Msg) error {
	_, err := in.pool.Exec(ctx, `INSERT INTO queue (data) VALUES ($1)`, payload(m))
	return err
}

func (in *skipLockedInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	data := make([][]byte, len(ms))
	for i, m := range ms {
		data[i] = payload(m)
	}
	_, err := in.pool.Exec(ctx, `INSERT INTO queue (data) SELECT unnest($1::bytea[])`, data)
	return err
}

func (in *skipLockedInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
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
			case <-time.After(skipLockedPoll):
			}
		}
	}), nil
}

// one handles one message in one transaction and reports whether there was
// one.
func (in *skipLockedInstance) one(ctx context.Context, handle func(Msg)) (bool, error) {
	tx, err := in.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var id int64
	var data []byte
	err = tx.QueryRow(ctx, `SELECT id, data FROM queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	handle(parsePayload(data))
	if _, err := tx.Exec(ctx, `DELETE FROM queue WHERE id = $1`, id); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

func (in *skipLockedInstance) Close() error {
	if in.pool != nil {
		in.pool.Close()
	}
	return in.schema.Drop()
}
