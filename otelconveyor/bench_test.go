package otelconveyor_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
)

// BenchmarkRoundTrip measures 8 producers and 8 consumers doing enqueue →
// dequeue → ack on one channelpubsub topic, plain and wrapped by
// Telemetry.Wrap. The wrapped one runs on the OpenTelemetry SDK as an app
// runs it: the default sampler (ParentBased(AlwaysSample), so every message
// is sampled, the worst case), a batch span processor over an exporter
// that drops the spans, and a meter provider with a manual reader. Both
// consumers handle each message in pubsub.HandlingContext, as a real one
// does. The overhead is the ratio of the two ns/op (or msgs/s).
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		roundTrip(b, func(ps pubsub.PubSub) pubsub.PubSub { return ps })
	})
	b.Run("otel", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() {
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		}()
		tel, err := otelconveyor.New(otelconveyor.Options{TracerProvider: tp, MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		roundTrip(b, tel.Wrap)
	})
}

// roundTrip runs b.N messages through a topic of wrap(channelpubsub.New())
// and reports the rate.
func roundTrip(b *testing.B, wrap func(pubsub.PubSub) pubsub.PubSub) {
	const producers, consumers = 8, 8
	ctx := context.Background()
	payload := []byte("a small message of 32 bytes ....")
	ps := wrap(channelpubsub.New())
	defer func() {
		if err := ps.(io.Closer).Close(); err != nil {
			b.Error(err)
		}
	}()
	tp := ps.Topic("bench")
	defer tp.Close()

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := p; i < b.N; i += producers {
				if err := tp.Enqueue(ctx, payload); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for c := range consumers {
		wg.Go(func() {
			for i := c; i < b.N; i += consumers {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				hctx := pubsub.HandlingContext(ctx, m)
				if err := m.Ack(hctx); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
