package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// conveyor sqlitepubsub with its defaults (sqlitepubsub.Open: WAL,
// synchronous=FULL), and the same drained by many consumer goroutines
// (drain only), each instance on a SQLite file of its own in a temporary
// directory removed when it closes.
type conveyorSQLite struct {
	consumers int // 0: W
}

const sqliteManyConsumers = 128

func init() {
	register(conveyorSQLite{})
	register(conveyorSQLite{consumers: sqliteManyConsumers})
}

func (c conveyorSQLite) Name() string {
	if c.consumers > 0 {
		return fmt.Sprintf("conveyor sqlitepubsub (%d consumers)", c.consumers)
	}
	return "conveyor sqlitepubsub"
}
func (conveyorSQLite) Kind() Kind     { return KindSQLite }
func (conveyorSQLite) Baseline() bool { return false }
func (c conveyorSQLite) Config(Config) string {
	workers := "W goroutines Dequeue+Ack"
	if c.consumers > 0 {
		workers = fmt.Sprintf("%d goroutines Dequeue+Ack (drain only)", c.consumers)
	}
	return fmt.Sprintf("sqlitepubsub.Open(file, Options{}): modernc.org/sqlite, WAL, synchronous=%s (a commit survives a power loss), "+
		"PollInterval %v; %s; batch: pubsub.EnqueueBatch; a fresh file per run, removed after",
		sqlitepubsub.DefaultSynchronous, sqlitepubsub.DefaultPollInterval, workers)
}

// Scenarios limits the many-consumers variant to the drain.
func (c conveyorSQLite) Scenarios() []string {
	if c.consumers > 0 {
		return []string{ScDrain}
	}
	return []string{ScEnqueue, ScBatch, ScDrain, ScLatency, ScBacklog}
}

// sqliteDir makes the temporary directory of one instance's file.
func sqliteDir() (string, error) { return os.MkdirTemp("", "conveyor-bench-sqlite-") }

type conveyorSQLiteInstance struct {
	dir       string
	ps        *sqlitepubsub.PubSub
	topic     pubsub.Topic
	consumers int
}

func (c conveyorSQLite) Open(ctx context.Context, _ *Env, _ Config) (Instance, error) {
	dir, err := sqliteDir()
	if err != nil {
		return nil, err
	}
	in, err := openConveyorSQLite(ctx, filepath.Join(dir, "bench.db"))
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	in.dir, in.consumers = dir, c.consumers
	return in, nil
}

func openConveyorSQLite(ctx context.Context, path string) (*conveyorSQLiteInstance, error) {
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	if err := ps.Migrate(ctx); err != nil {
		return nil, errors.Join(err, ps.Close())
	}
	return &conveyorSQLiteInstance{ps: ps, topic: ps.Topic(conveyorTopic)}, nil
}

func (in *conveyorSQLiteInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Enqueue(ctx, payload(m))
}

func (in *conveyorSQLiteInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	return enqueueBatch(ctx, in.topic, ms)
}

func (in *conveyorSQLiteInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	if in.consumers > 0 {
		workers = in.consumers
	}
	return consumeTopic(ctx, in.topic, workers, handle, done), nil
}

func (in *conveyorSQLiteInstance) Close() error {
	var errs []error
	if in.ps != nil {
		errs = append(errs, in.ps.Close())
	}
	if in.dir != "" {
		errs = append(errs, os.RemoveAll(in.dir))
	}
	return errors.Join(errs...)
}

// FillBacklog implements Backlogger: the backlog is put with
// pubsub.EnqueueBatch, 1,000 messages a call, from W goroutines; the
// consumer process opens the same file (sqliteBacklogChild).
func (conveyorSQLite) FillBacklog(ctx context.Context, _ *Env, cfg Config, n int) ([]string, func() error, error) {
	dir, err := sqliteDir()
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "bench.db")
	in, err := openConveyorSQLite(ctx, path)
	if err != nil {
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := prefill(ctx, in, n, cfg.W, 1000); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("fill: %w", err), in.ps.Close(), os.RemoveAll(dir))
	}
	if err := in.ps.Close(); err != nil {
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	return []string{childEnvVar + "=" + childSQLite, childDSN + "=" + path, childN + "=" + strconv.Itoa(n),
			childW + "=" + strconv.Itoa(cfg.W), childMax + "=" + cfg.BacklogMax.String()},
		func() error { return os.RemoveAll(dir) }, nil
}
