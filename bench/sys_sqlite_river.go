package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// River on SQLite (riversqlite), the peer of sqlitepubsub, configured as
// its own `river bench` (FetchCooldown 2 ms, FetchPollInterval 20 ms,
// MaxWorkers 2,000; on SQLite it has no LISTEN, so it polls), on a file
// with the same pragmas as the baseline's (WAL, synchronous=FULL).
type riverSQLite struct{}

func init() { register(riverSQLite{}) }

func (riverSQLite) Name() string   { return "river sqlite (tuned)" }
func (riverSQLite) Kind() Kind     { return KindSQLite }
func (riverSQLite) Baseline() bool { return false }
func (riverSQLite) Config(Config) string {
	return fmt.Sprintf("river v0.51.2, riversqlite on modernc.org/sqlite (database/sql, %d conns), WAL, synchronous=FULL, busy_timeout 5 s; "+
		"FetchCooldown %v, FetchPollInterval %v, MaxWorkers %d (as its `river bench`); Insert / InsertMany; "+
		"done = EventKindJobCompleted; a fresh file per run, removed after",
		riverSQLiteConns, riverTunedFetchCooldown, riverTunedFetchPollInterval, riverTunedMaxWorkers)
}

// riverSQLiteConns is the pool riversqlite gets (sqlitepubsub.OpenDB's
// size on 2 cores).
const riverSQLiteConns = 4

type riverSQLiteInstance struct {
	dir    string
	db     *sql.DB
	client *river.Client[*sql.Tx]
	worker *riverWorker
}

func (riverSQLite) Open(ctx context.Context, _ *Env, _ Config) (Instance, error) {
	dir, err := sqliteDir()
	if err != nil {
		return nil, err
	}
	in := &riverSQLiteInstance{dir: dir, worker: &riverWorker{}}
	if in.db, err = openSQLite(filepath.Join(dir, "river.db")); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	in.db.SetMaxOpenConns(riverSQLiteConns)
	driver := riversqlite.New(in.db)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger()})
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("rivermigrate: %w", err), in.Close())
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, in.worker)
	if in.client, err = river.NewClient(driver, &river.Config{
		Logger:            quietLogger(),
		FetchCooldown:     riverTunedFetchCooldown,
		FetchPollInterval: riverTunedFetchPollInterval,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverTunedMaxWorkers}},
		Workers:           workers,
	}); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

func (in *riverSQLiteInstance) Enqueue(ctx context.Context, m Msg) error {
	_, err := in.client.Insert(ctx, riverArgs{N: m.N, T: m.T}, nil)
	return err
}

func (in *riverSQLiteInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	params := make([]river.InsertManyParams, len(ms))
	for i, m := range ms {
		params[i].Args = riverArgs{N: m.N, T: m.T}
	}
	_, err := in.client.InsertMany(ctx, params)
	return err
}

func (in *riverSQLiteInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	in.worker.handle = handle
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

func (in *riverSQLiteInstance) Close() error {
	var errs []error
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	return errors.Join(append(errs, os.RemoveAll(in.dir))...)
}
