package otelconveyor_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
)

// BenchmarkRoundTrip measures 8 producers and 8 consumers doing enqueue →
// dequeue → ack on one channelpubsub topic, plain and wrapped by
// Telemetry.Wrap. The wrapped ones run on the OpenTelemetry SDK as an app
// runs it: a batch span processor over an exporter that drops the spans,
// and a meter provider with a manual reader. "otel" has the default
// sampler (ParentBased(AlwaysSample), so every message is sampled, the
// worst case); "otel_1pct" samples 1% of the traces
// (ParentBased(TraceIDRatioBased(0.01)), a production setting), so that
// most spans are made but not recorded. Both consumers handle each message
// in pubsub.HandlingContext, as a real one does. The overhead is the ratio
// of a wrapped case's ns/op (or msgs/s) to plain's.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		roundTrip(b, func(ps pubsub.PubSub) pubsub.PubSub { return ps })
	})
	b.Run("otel", func(b *testing.B) {
		roundTrip(b, otelWrap(b))
	})
	b.Run("otel_1pct", func(b *testing.B) {
		roundTrip(b, otelWrap(b, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))))
	})
}

// otelWrap returns the Wrap of a Telemetry on an SDK as an app runs it: a
// batch span processor over an exporter that drops the spans, then opts
// (a sampler), and a meter provider with a manual reader, shut down when
// b ends.
func otelWrap(b *testing.B, opts ...sdktrace.TracerProviderOption) func(pubsub.PubSub) pubsub.PubSub {
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithBatcher(tracetest.NewNoopExporter())}, opts...)...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := otelconveyor.New(otelconveyor.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	return tel.Wrap
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

// BenchmarkSDKFloor measures, at 1% sampling, the OpenTelemetry SDK's own
// work that instrumenting one message needs at the least, whoever
// instruments it: a send span started and ended, its trace context
// written into a header and read back, a process span started from it and
// ended, and a duration recorded for each. Compare its ns/op with
// BenchmarkRoundTrip's otel_1pct less plain (at GOMAXPROCS=1): the
// difference is what conveyor adds on top of the SDK.
func BenchmarkSDKFloor(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	}()
	tracer := tp.Tracer("floor")
	h, err := mp.Meter("floor").Float64Histogram("d")
	if err != nil {
		b.Fatal(err)
	}
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("messaging.destination.name", "bench")))
	prop := propagation.TraceContext{}
	send := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	process := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sctx, span := tracer.Start(ctx, "send bench", send...)
		carrier := propagation.MapCarrier(make(map[string]string, 1))
		prop.Inject(sctx, carrier)
		h.Record(ctx, 0.001, set)
		span.End()
		pctx, pspan := tracer.Start(prop.Extract(ctx, carrier), "process bench", process...)
		_ = pctx
		h.Record(ctx, 0.001, set)
		pspan.End()
	}
}
