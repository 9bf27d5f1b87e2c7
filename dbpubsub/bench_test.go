package dbpubsub_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Benchmarks report msgs/s. Each dbpubsub benchmark has a reference in the
// same run: plain SQL, one row per transaction, the way a naive
// PostgreSQL queue works, so ratios can be given:
//
//	scripts/with-postgres.sh go test -run '^$' -bench . -benchtime 20000x ./dbpubsub/

// drainWorkers are the consumer counts of the drain benchmarks: 8, as
// asked, and 32, to show how grouping claims and acks scales.
var drainWorkers = []int{8, 32}

func reportRate(b *testing.B, n int, start time.Time) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
}

func BenchmarkEnqueue(b *testing.B) {
	_, db := newStore(b)
	tp := newPubSub(b, db, dbpubsub.Options{}).Topic("bench")
	ctx := context.Background()
	data := []byte(`{"order":12345,"amount":"9.99"}`)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := tp.Enqueue(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N, start)
}

func BenchmarkEnqueueBatch(b *testing.B) {
	const size = 100
	_, db := newStore(b)
	tp := newPubSub(b, db, dbpubsub.Options{}).Topic("bench")
	ctx := context.Background()
	batch := make([][]byte, size)
	for i := range batch {
		batch[i] = []byte(`{"order":12345,"amount":"9.99"}`)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N*size, start)
}

// BenchmarkReferenceEnqueue is a plain INSERT per message.
func BenchmarkReferenceEnqueue(b *testing.B) {
	_, db := newStore(b)
	ctx := context.Background()
	data := []byte(`{"order":12345,"amount":"9.99"}`)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := db.DB.ExecContext(ctx, "INSERT INTO conveyor_events (topic, data) VALUES ($1, $2)", "bench", data); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N, start)
}

// BenchmarkEnqueueParallel: 8 producers, one message per call on one
// topic handle, whose concurrent calls share statements: compare with
// BenchmarkReferenceEnqueueParallel, a statement per call.
func BenchmarkEnqueueParallel(b *testing.B) {
	_, db := newStore(b)
	tp := newPubSub(b, db, dbpubsub.Options{}).Topic("bench")
	data := []byte(`{"order":12345,"amount":"9.99"}`)
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := tp.Enqueue(context.Background(), data); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, b.N, start)
}

// BenchmarkReferenceEnqueueParallel: 8 producers, a plain INSERT each.
func BenchmarkReferenceEnqueueParallel(b *testing.B) {
	_, db := newStore(b)
	data := []byte(`{"order":12345,"amount":"9.99"}`)
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.DB.ExecContext(context.Background(),
				"INSERT INTO conveyor_events (topic, data) VALUES ($1, $2)", "bench", data); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, b.N, start)
}

// BenchmarkEnqueueBatchParallel: 8 producers, 100 messages per call.
func BenchmarkEnqueueBatchParallel(b *testing.B) {
	_, db := newStore(b)
	tp := newPubSub(b, db, dbpubsub.Options{}).Topic("bench")
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		batch := benchBatch()
		for pb.Next() {
			if err := pubsub.EnqueueBatch(context.Background(), tp, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, b.N*len(benchBatch()), start)
}

// BenchmarkReferenceEnqueueBatchParallel: 8 producers, a plain INSERT …
// SELECT unnest of 100 rows each.
func BenchmarkReferenceEnqueueBatchParallel(b *testing.B) {
	_, db := newStore(b)
	b.SetParallelism(8 / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		batch := benchBatch()
		for pb.Next() {
			if _, err := db.DB.ExecContext(context.Background(),
				"INSERT INTO conveyor_events (topic, data) SELECT $1, unnest($2::bytea[])", "bench", batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, b.N*len(benchBatch()), start)
}

func benchBatch() [][]byte {
	batch := make([][]byte, 100)
	for i := range batch {
		batch[i] = []byte(`{"order":12345,"amount":"9.99"}`)
	}
	return batch
}

// fill enqueues n messages on topic, outside the benchmark's timer.
func fill(b *testing.B, tp pubsub.Topic, n int) {
	b.Helper()
	ctx := context.Background()
	batch := make([][]byte, 0, 1000)
	for i := range n {
		batch = append(batch, fmt.Appendf(nil, "%d", i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkDrain: b.N messages waiting; 8 (then 32) workers Dequeue and
// Ack them.
func BenchmarkDrain(b *testing.B) {
	for _, workers := range drainWorkers {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchDrain(b, workers) })
	}
}

func benchDrain(b *testing.B, workers int) {
	_, db := newStore(b)
	ps := newPubSub(b, db, dbpubsub.Options{})
	tp := ps.Topic("bench")
	fill(b, tp, b.N)
	b.ResetTimer()
	start := time.Now()
	ackAll(b, tp, workers, int64(b.N))()
	reportRate(b, b.N, start)
}

// BenchmarkReferenceDrain: b.N messages waiting; 8 (then 32) workers, each
// with a connection of its own, claim one row per transaction with FOR
// UPDATE SKIP LOCKED and finish it.
func BenchmarkReferenceDrain(b *testing.B) {
	for _, workers := range drainWorkers {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchReferenceDrain(b, workers) })
	}
}

func benchReferenceDrain(b *testing.B, workers int) {
	_, db := newStore(b)
	db.DB.SetMaxOpenConns(workers)
	ctx := context.Background()
	// A naive queue's own table: pending rows of the message table (a
	// dbpubsub enqueue would put them in the ready table).
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data)
		SELECT 'bench', convert_to(g::text, 'UTF8') FROM generate_series(1, $1) g`, b.N); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var claimed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				done, err := referenceClaimOne(ctx, db.DB)
				if err != nil {
					b.Error(err)
					return
				}
				if done {
					return
				}
				claimed.Add(1)
			}
		}()
	}
	wg.Wait()
	reportRate(b, b.N, start)
	if n := claimed.Load(); n != int64(b.N) {
		b.Fatalf("the reference drained %d messages, want %d", n, b.N)
	}
}

func referenceClaimOne(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var id int64
	var data []byte
	err = tx.QueryRowContext(ctx, `SELECT id, data FROM conveyor_events
		WHERE topic = $1 AND status = 'pending' AND run_at <= now()
		ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`, "bench").Scan(&id, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conveyor_events SET status = 'finished', finished_at = now() WHERE id = $1`, id); err != nil {
		return false, err
	}
	return false, tx.Commit()
}

// BenchmarkRoundTrip: 8 producers enqueue b.N messages one by one while 8
// consumers on the same PubSub dequeue and ack them, as an app that
// publishes and consumes at once does (the event layer's shape); msgs/s
// from the first enqueue until the last ack.
func BenchmarkRoundTrip(b *testing.B) {
	_, db := newStore(b)
	ps := newPubSub(b, db, dbpubsub.Options{})
	tp := ps.Topic("bench")
	if err := tp.Enqueue(context.Background(), []byte("warm-up")); err != nil {
		b.Fatal(err)
	}
	const workers = 8
	b.ResetTimer()
	start := time.Now()
	wait := ackAll(b, tp, workers, int64(b.N)+1) // and the warm-up message
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := tp.Enqueue(context.Background(), []byte(`{"order":1,"amount":"9.99"}`)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	wait()
	reportRate(b, b.N, start)
}

// ackAll starts workers goroutines that dequeue and ack messages of tp
// until n are acked; the func it returns waits for that.
func ackAll(b *testing.B, tp pubsub.Topic, workers int, n int64) (wait func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var acked atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						b.Error(err)
					}
					return
				}
				if err := m.Ack(context.Background()); err != nil {
					b.Error(err)
					return
				}
				if acked.Add(1) == n {
					cancel()
				}
			}
		}()
	}
	return func() {
		wg.Wait()
		cancel()
	}
}
