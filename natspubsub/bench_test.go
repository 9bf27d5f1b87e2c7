package natspubsub_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// benchWorkers is the number of producers and consumers of the benchmarks.
const benchWorkers = 8

// BenchmarkEnqueue: benchWorkers producers, one message per Enqueue.
func BenchmarkEnqueue(b *testing.B) {
	tp := connect(b, natspubsub.Options{}).Topic("bench")
	ctx := context.Background()
	data := make([]byte, 100)
	b.SetParallelism(benchWorkers)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := tp.Enqueue(ctx, data); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDrain: benchWorkers consumers Dequeue and Ack a backlog of b.N.
func BenchmarkDrain(b *testing.B) {
	tp := connect(b, natspubsub.Options{}).Topic("bench")
	ctx := context.Background()
	fill(b, tp, b.N)
	b.ResetTimer()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				m, err := tp.Dequeue(ctx)
				if err == nil {
					err = m.Ack(ctx)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkDrainBaseline: the same drain written on nats.go alone, fetching
// batches of 100 and acking each message with a confirmed ack, as conveyor's
// Ack does: the reference of BenchmarkDrain.
func BenchmarkDrainBaseline(b *testing.B) {
	b.Run("DoubleAck", func(b *testing.B) {
		drainBaseline(b, func(m jetstream.Msg) error { return m.DoubleAck(context.Background()) })
	})
	b.Run("Ack", func(b *testing.B) { drainBaseline(b, jetstream.Msg.Ack) })
}

func drainBaseline(b *testing.B, ackFn func(jetstream.Msg) error) {
	url := natstest.URL(b)
	prefix := natstest.Prefix(b, url)
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: prefix + "_base", Subjects: []string{prefix + ".base"}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 100)
	for i := 0; i < b.N; i += 1000 {
		var futures []jetstream.PubAckFuture
		for j := i; j < min(i+1000, b.N); j++ {
			f, err := js.PublishAsync(prefix+".base", data)
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for left.Load() > 0 {
				batch, err := c.Fetch(100, jetstream.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					b.Error(err)
					return
				}
				for m := range batch.Messages() {
					if err := ackFn(m); err != nil {
						b.Error(err)
						return
					}
					left.Add(-1)
				}
			}
		})
	}
	wg.Wait()
}

// fill enqueues n messages on tp, benchWorkers at a time.
func fill(b *testing.B, tp pubsub.Topic, n int) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range benchWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := tp.Enqueue(ctx, []byte(fmt.Sprint(n))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
