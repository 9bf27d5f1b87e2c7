package dbpubsub_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
)

// BenchmarkDequeueStaleStatistics measures one consumer's Dequeue and Ack
// latency (p50) on an empty message table, then, in the same PubSub (its
// plans made on the empty table), from the moment 1M finished and 1M dead
// rows have arrived with no ANALYZE (autovacuum off for the table), then
// once the table is analyzed. Each phase is bounded in messages and time;
// it runs once whatever b.N:
//
//	go test -run '^$' -bench DequeueStaleStatistics -benchtime 1x ./dbpubsub/
func BenchmarkDequeueStaleStatistics(b *testing.B) {
	const (
		perPhase = 300
		budget   = 20 * time.Second
		rows     = 1_000_000 // finished, and as many dead
	)
	ctx := context.Background()
	_, db := newStore(b)
	if _, err := db.ExecContext(ctx, `ALTER TABLE conveyor_events SET (autovacuum_enabled = false)`); err != nil {
		b.Fatal(err)
	}
	tp := newPubSub(b, db, dbpubsub.Options{}).Topic("bench")
	analyzed := func() (n int64) {
		if err := db.QueryRowContext(ctx, `SELECT analyze_count FROM pg_stat_user_tables
			WHERE relid = 'conveyor_events'::regclass`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	// phase returns the p50 of Dequeue and of Ack over up to n messages
	// (fewer when the budget runs out), each enqueued alone just before.
	phase := func(name string, n int) (deq, ack time.Duration) {
		var ds, as []time.Duration
		start := time.Now()
		for len(ds) < n && time.Since(start) < budget {
			if err := tp.Enqueue(ctx, []byte("x")); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			m, err := tp.Dequeue(ctx)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := m.Ack(ctx); err != nil {
				b.Fatal(err)
			}
			ds, as = append(ds, t1.Sub(t0)), append(as, time.Since(t1))
		}
		slices.Sort(ds)
		slices.Sort(as)
		deq, ack = ds[len(ds)/2], as[len(as)/2]
		b.Logf("%-32s %4d messages in %5.1fs: Dequeue p50 %7.3f ms max %8.3f ms, Ack p50 %7.3f ms; analyses so far %d",
			name, len(ds), time.Since(start).Seconds(), ms(deq), ms(ds[len(ds)-1]), ms(ack), analyzed())
		return deq, ack
	}
	phase("warm-up (plans made)", 50)
	emptyDeq, emptyAck := phase("empty table", perPhase)

	if _, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO conveyor_events (topic, data, status, run_at, finished_at, attempts)
		SELECT 'bench', '\x00', s, now(), now(), 1 FROM unnest('{finished,dead}'::text[]) AS s, generate_series(1, %d)`, rows)); err != nil {
		b.Fatal(err)
	}
	staleDeq, staleAck := phase("2M rows arrived, no ANALYZE yet", perPhase)

	if _, err := db.ExecContext(ctx, `ANALYZE conveyor_events`); err != nil {
		b.Fatal(err)
	}
	freshDeq, freshAck := phase("2M rows, analyzed", perPhase)

	b.ReportMetric(ms(emptyDeq), "empty-dequeue-p50-ms")
	b.ReportMetric(ms(staleDeq)/ms(emptyDeq), "stale/empty-dequeue")
	b.ReportMetric(ms(freshDeq)/ms(emptyDeq), "fresh/empty-dequeue")
	b.ReportMetric(ms(staleAck)/ms(emptyAck), "stale/empty-ack")
	b.ReportMetric(ms(freshAck)/ms(emptyAck), "fresh/empty-ack")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
