package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River, twice: with its defaults (MaxWorkers = W), and with the
// configuration of its own benchmark (`river bench`: FetchCooldown 2 ms,
// FetchPollInterval 20 ms, MaxWorkers 2,000).
type riverSystem struct{ tuned bool }

func init() {
	register(riverSystem{})
	register(riverSystem{tuned: true})
}

func (r riverSystem) Name() string {
	if r.tuned {
		return "river (tuned)"
	}
	return "river (defaults)"
}
func (riverSystem) Kind() Kind     { return KindPostgres }
func (riverSystem) Baseline() bool { return false }

const (
	riverTunedFetchCooldown     = 2 * time.Millisecond
	riverTunedFetchPollInterval = 20 * time.Millisecond
	riverTunedMaxWorkers        = 2000
)

func (r riverSystem) Config(cfg Config) string {
	if r.tuned {
		return fmt.Sprintf("river v0.51.2, riverpgxv5, pgxpool of %d conns; FetchCooldown %v, FetchPollInterval %v, "+
			"MaxWorkers %d (as its `river bench`); Insert / InsertManyFast (COPY); done = EventKindJobCompleted",
			cfg.PoolSize, riverTunedFetchCooldown, riverTunedFetchPollInterval, riverTunedMaxWorkers)
	}
	return fmt.Sprintf("river v0.51.2, riverpgxv5, pgxpool of %d conns; defaults (FetchCooldown %v, FetchPollInterval %v), "+
		"MaxWorkers W; Insert / InsertManyFast (COPY); done = EventKindJobCompleted",
		cfg.PoolSize, river.FetchCooldownDefault, river.FetchPollIntervalDefault)
}

// riverArgs is the job: the same {"n":N,"t":T} as the other systems.
type riverArgs struct {
	N int64 `json:"n"`
	T int64 `json:"t"`
}

func (riverArgs) Kind() string { return "bench" }

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	handle func(Msg)
}

func (w *riverWorker) Work(ctx context.Context, j *river.Job[riverArgs]) error {
	if h := w.handle; h != nil {
		h(Msg{N: j.Args.N, T: j.Args.T})
	}
	return nil
}

type riverInstance struct {
	schema *Schema
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	worker *riverWorker
}

func (r riverSystem) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	schema, err := env.NewSchema(ctx, "river")
	if err != nil {
		return nil, err
	}
	in := &riverInstance{schema: schema, worker: &riverWorker{}}
	pcfg, err := pgxpool.ParseConfig(schema.DSN)
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	pcfg.MaxConns = int32(cfg.PoolSize)
	if in.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	driver := riverpgxv5.New(in.pool)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema.Name, Logger: quietLogger()})
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("rivermigrate: %w", err), in.Close())
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, in.worker)
	rc := &river.Config{
		Logger:  quietLogger(),
		Schema:  schema.Name,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.W}},
		Workers: workers,
	}
	if r.tuned {
		rc.FetchCooldown = riverTunedFetchCooldown
		rc.FetchPollInterval = riverTunedFetchPollInterval
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverTunedMaxWorkers}}
	}
	if in.client, err = river.NewClient(driver, rc); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

func (in *riverInstance) Enqueue(ctx context.Context, m Msg) error {
	_, err := in.client.Insert(ctx, riverArgs{N: m.N, T: m.T}, nil)
	return err
}

func (in *riverInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	params := make([]river.InsertManyParams, len(ms))
	for i, m := range ms {
		params[i].Args = riverArgs{N: m.N, T: m.T}
	}
	_, err := in.client.InsertManyFast(ctx, params)
	return err
}

func (in *riverInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	in.worker.handle = handle
	// Like `river bench`, count a job when the client reports it completed
	// (after the completer has written it), not when Work returns.
	events, cancelSub := in.client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: 100_000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for ev := range events {
			if ev != nil {
				done()
			}
		}
	}()
	if err := in.client.Start(context.WithoutCancel(ctx)); err != nil {
		cancelSub()
		<-subDone
		return nil, err
	}
	return func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := in.client.Stop(sctx)
		cancelSub()
		<-subDone
		return err
	}, nil
}

func (in *riverInstance) Close() error {
	if in.pool != nil {
		in.pool.Close()
	}
	return in.schema.Drop()
}
