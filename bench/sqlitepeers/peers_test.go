// Package sqlitepeers measures sqlitepubsub beside River on SQLite
// (riversqlite) in the same run, on the same kind of file (OpenDB's: WAL,
// busy timeout, IMMEDIATE transactions), at synchronous NORMAL and FULL:
// enqueue one at a time, and the drain of a backlog by 4 workers. See
// docs/design/sqlitepubsub.md.
package sqlitepeers_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

const workers = 4

var data = make([]byte, 100)

func openDB(b *testing.B, sync string) *bun.DB {
	db, err := sqlitepubsub.OpenDB(filepath.Join(b.TempDir(), "peer.db"), sync)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

func conveyor(b *testing.B, sync string) pubsub.Topic {
	ps, err := sqlitepubsub.New(openDB(b, sync), sqlitepubsub.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	if err := ps.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ps.Topic("bench")
}

type args struct {
	Data []byte `json:"data"`
}

func (args) Kind() string { return "bench" }

type worker struct {
	river.WorkerDefaults[args]
	left atomic.Int64
	done chan struct{}
}

func (w *worker) Work(context.Context, *river.Job[args]) error {
	if w.left.Add(-1) == 0 {
		close(w.done)
	}
	return nil
}

// riverClient is River with its defaults and MaxWorkers 4, or tuned as
// its own `river bench` (FetchCooldown 2 ms, FetchPollInterval 20 ms,
// MaxWorkers 2,000), as bench/sys_river.go runs it on PostgreSQL.
func riverClient(b *testing.B, sync string, w *worker, tuned bool) *river.Client[*sql.Tx] {
	db := openDB(b, sync)
	driver := riversqlite.New(db.DB)
	quiet := slog.New(slog.DiscardHandler)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := mig.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, w)
	c, err := river.NewClient(driver, riverConfig(quiet, ws, tuned))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func riverConfig(quiet *slog.Logger, ws *river.Workers, tuned bool) *river.Config {
	if tuned {
		return &river.Config{Logger: quiet, FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2000}}, Workers: ws}
	}
	return &river.Config{Logger: quiet, Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}, Workers: ws}
}

func BenchmarkEnqueue(b *testing.B) {
	for _, mode := range []string{"NORMAL", "FULL"} {
		b.Run("sqlitepubsub/sync="+mode, func(b *testing.B) {
			topic := conveyor(b, mode)
			ctx := context.Background()
			for b.Loop() {
				if err := topic.Enqueue(ctx, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run("river/sync="+mode, func(b *testing.B) {
			c := riverClient(b, mode, &worker{}, false)
			ctx := context.Background()
			for b.Loop() {
				if _, err := c.Insert(ctx, args{Data: data}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkDrain(b *testing.B) {
	for _, mode := range []string{"NORMAL", "FULL"} {
		b.Run("sqlitepubsub/sync="+mode, func(b *testing.B) {
			topic := conveyor(b, mode)
			ctx := context.Background()
			batch := make([][]byte, b.N)
			for i := range batch {
				batch[i] = data
			}
			if err := pubsub.EnqueueBatch(ctx, topic, batch); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						m, err := topic.Dequeue(ctx)
						if err != nil {
							b.Error(err)
							return
						}
						if err := m.Ack(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
		for _, tuned := range []bool{false, true} {
			name := "river/sync=" + mode
			if tuned {
				name = "river-tuned/sync=" + mode
			}
			b.Run(name, func(b *testing.B) {
				w := &worker{done: make(chan struct{})}
				w.left.Store(int64(b.N))
				c := riverClient(b, mode, w, tuned)
				ctx := context.Background()
				params := make([]river.InsertManyParams, b.N)
				for i := range params {
					params[i] = river.InsertManyParams{Args: args{Data: data}}
				}
				if _, err := c.InsertMany(ctx, params); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				if err := c.Start(ctx); err != nil {
					b.Fatal(err)
				}
				<-w.done
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				if err := c.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
