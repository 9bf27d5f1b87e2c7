package event_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
)

const benchWorkers = 8

// BenchmarkDispatchHandle measures dispatch → decode → handle → ack on
// channelpubsub with 8 workers, against the same traffic of raw bytes
// through the topic with 8 consumers (the reference: what event adds is
// the difference).
func BenchmarkDispatchHandle(b *testing.B) {
	b.Run("event", func(b *testing.B) {
		ctx := di.NewContext(context.Background())
		defer di.Shutdown(ctx)
		if err := channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{Capacity: 4096}); err != nil {
			b.Fatal(err)
		}
		if err := event.Register(ctx); err != nil {
			b.Fatal(err)
		}
		var handled atomic.Int64
		done := make(chan struct{})
		svc, err := event.NewService("bench", event.ServiceOptions{Workers: benchWorkers})
		if err != nil {
			b.Fatal(err)
		}
		_ = event.ListenFunc(svc, func(_ context.Context, e OrderPlaced) error {
			if handled.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		})
		if err := svc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		d, err := di.ResolveNamed[event.Dispatcher](ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if err := d.Dispatch(ctx, OrderPlaced{ID: i, Email: "ann@example.com"}); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})

	b.Run("pubsub-reference", func(b *testing.B) {
		ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 4096})
		if err != nil {
			b.Fatal(err)
		}
		defer ps.Close()
		tp := ps.Topic("bench")
		ctx, cancel := context.WithCancel(context.Background())
		var handled atomic.Int64
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range benchWorkers {
			wg.Go(func() {
				for {
					m, err := tp.Dequeue(ctx)
					if err != nil {
						return
					}
					_ = m.Ack(ctx)
					if handled.Add(1) == int64(b.N) {
						close(done)
					}
				}
			})
		}
		data, _ := event.Encode(OrderPlaced{ID: 1, Email: "ann@example.com"})
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if err := tp.Enqueue(ctx, data); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		cancel()
		wg.Wait()
	})
}
