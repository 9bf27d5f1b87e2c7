package relay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

// BenchmarkRelay relays b.N messages from dbpubsub to natspubsub and
// reports msgs/s, with the source's acks committed one by one (sync) or
// grouped (async: dbpubsub's default; sync: Options.ConfirmAck). Its reference, in the same
// run, is the hand-written loop a relay replaces: Dequeue, a plain
// Enqueue (no key, so no deduplication), Ack, with as many goroutines.
//
//	scripts/with-postgres.sh scripts/with-nats.sh go test -run '^$' -bench Relay -benchtime 5000x ./relay/
func BenchmarkRelay(b *testing.B) {
	for _, c := range []struct {
		ack     string
		workers int
	}{{"sync", 1}, {"sync", relay.DefaultWorkers}, {"async", 1}, {"async", relay.DefaultWorkers}} {
		async, workers := c.ack == "async", c.workers
		b.Run(fmt.Sprintf("relay/ack=%s/workers=%d", c.ack, workers), func(b *testing.B) {
			src, dst := benchTopics(b, async)
			r, err := relay.New(src, dst, relay.Options{Workers: workers, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- r.Run(ctx) }()
			for r.Stats().Relayed < int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			rate := float64(b.N) / time.Since(start).Seconds()
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "msgs/s")
		})
		b.Run(fmt.Sprintf("reference/ack=%s/workers=%d", c.ack, workers), func(b *testing.B) {
			src, dst := benchTopics(b, async)
			ctx := context.Background()
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				left = b.N
			)
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						mu.Lock()
						if left == 0 {
							mu.Unlock()
							return
						}
						left--
						mu.Unlock()
						m, err := src.Dequeue(ctx)
						if err == nil {
							err = dst.Enqueue(ctx, m.Data())
						}
						if err == nil {
							err = m.Ack(ctx)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// benchTopics returns a dbpubsub topic holding b.N messages, its acks
// async or not, and an empty natspubsub topic.
func benchTopics(b *testing.B, async bool) (src, dst pubsub.Topic) {
	_, db := dbpubsubtest.NewStore(b)
	src = dbpubsubtest.New(b, db, dbpubsub.Options{Logger: quiet, ConfirmAck: !async}).Topic("outbox")
	data := make([][]byte, 0, 1000)
	for i := 0; i < b.N; i += len(data) {
		data = data[:0]
		for j := i; j < min(i+1000, b.N); j++ {
			data = append(data, []byte(fmt.Sprintf(`{"order":%d,"amount":"9.99"}`, j)))
		}
		if err := pubsub.EnqueueBatch(context.Background(), src, data); err != nil {
			b.Fatal(err)
		}
	}
	url := natstest.URL(b)
	ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: natstest.Prefix(b, url), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	return src, ps.Topic("orders")
}
