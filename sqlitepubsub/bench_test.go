package sqlitepubsub_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// The benchmarks run sqlitepubsub and, as the reference in the same run,
// a hand-written queue loop on the same kind of file (insert; claim by
// UPDATE … RETURNING; delete), at synchronous NORMAL and FULL. 100 B
// payloads; the drain with 4 consumers.

var benchData = make([]byte, 100)

func benchPubSub(b *testing.B, sync string) *sqlitepubsub.PubSub {
	ps, err := sqlitepubsub.Open(filepath.Join(b.TempDir(), "bench.db"), sqlitepubsub.Options{Synchronous: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	if err := ps.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ps
}

func BenchmarkEnqueue(b *testing.B) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run("sync="+sync, func(b *testing.B) {
			topic := benchPubSub(b, sync).Topic("bench")
			ctx := context.Background()
			for b.Loop() {
				if err := topic.Enqueue(ctx, benchData); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run("baseline/sync="+sync, func(b *testing.B) {
			db := baselineDB(b, sync)
			ctx := context.Background()
			for b.Loop() {
				if _, err := db.ExecContext(ctx, `INSERT INTO q (due, data) VALUES (?, ?)`, time.Now().UnixMicro(), benchData); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkDrain(b *testing.B) {
	const consumers = 4
	for _, sync := range []string{"NORMAL", "FULL"} {
		b.Run("sync="+sync, func(b *testing.B) {
			ps := benchPubSub(b, sync)
			topic := ps.Topic("bench")
			ctx := context.Background()
			batch := make([][]byte, b.N)
			for i := range batch {
				batch[i] = benchData
			}
			if err := pubsub.EnqueueBatch(ctx, topic, batch); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			drain(b, consumers, b.N, func() error {
				m, err := topic.Dequeue(ctx)
				if err != nil {
					return err
				}
				return m.Ack(ctx)
			})
		})
		b.Run("baseline/sync="+sync, func(b *testing.B) {
			db := baselineDB(b, sync)
			ctx := context.Background()
			tx, err := db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				if _, err := tx.Exec(`INSERT INTO q (due, data) VALUES (0, ?)`, benchData); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			drain(b, consumers, b.N, func() error {
				var id int64
				var data []byte
				err := db.QueryRowContext(ctx, `UPDATE q SET state = 1 WHERE id = (
					SELECT id FROM q WHERE state = 0 AND due <= ? ORDER BY due, id LIMIT 1) RETURNING id, data`,
					time.Now().UnixMicro()).Scan(&id, &data)
				if err != nil {
					return err
				}
				_, err = db.ExecContext(ctx, `DELETE FROM q WHERE id = ?`, id)
				return err
			})
		})
	}
}

// drain runs n calls of f on w goroutines and reports msgs/s.
func drain(b *testing.B, w, n int, f func() error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := n
	for range w {
		wg.Go(func() {
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				if err := f(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// baselineDB is the hand-written queue's file: OpenDB's settings, one
// table.
func baselineDB(b *testing.B, sync string) *sql.DB {
	db, err := sqlitepubsub.OpenDB(filepath.Join(b.TempDir(), "baseline.db"), sync)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(`CREATE TABLE q (id INTEGER PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0, due INTEGER NOT NULL, data BLOB NOT NULL);
		CREATE INDEX q_due ON q (state, due, id)`); err != nil {
		b.Fatal(err)
	}
	return db.DB
}
