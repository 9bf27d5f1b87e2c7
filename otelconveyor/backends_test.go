package otelconveyor_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
)

// patience bounds every wait for something that should happen.
const patience = 30 * time.Second

// retry is the policy of every test backend: a message failing twice is
// dead, and retries come quickly.
var retry = pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Jitter: -1}

// backends are the backends every test runs on, each registered in a
// fresh injector with a store of its own (a schema, a stream prefix).
var backends = []struct {
	name     string
	register func(t *testing.T, ctx context.Context)
}{
	{"channelpubsub", func(t *testing.T, ctx context.Context) {
		if err := channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{Retry: retry}); err != nil {
			t.Fatal(err)
		}
	}},
	{"dbpubsub", func(t *testing.T, ctx context.Context) {
		_, db := dbpubsubtest.NewStore(t)
		if err := di.RegisterBorrowed(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := dbpubsub.RegisterWithOptions(ctx, dbpubsub.Options{Retry: retry, PollInterval: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}},
	{"natspubsub", func(t *testing.T, ctx context.Context) {
		url := natstest.URL(t)
		prefix := natstest.Prefix(t, url)
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if err := di.RegisterBorrowed(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := natspubsub.RegisterWithOptions(ctx, natspubsub.Options{Prefix: prefix, Retry: retry}); err != nil {
			t.Fatal(err)
		}
	}},
}

// eachBackend runs f as a parallel subtest per backend.
func eachBackend(t *testing.T, f func(t *testing.T, register func(*testing.T, context.Context))) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b.register)
		})
	}
}

// sdk is an OpenTelemetry SDK whose spans and metrics a test reads.
type sdk struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	tel    *otelconveyor.Telemetry
}

func newSDK(t *testing.T, opts otelconveyor.Options) *sdk {
	t.Helper()
	s := &sdk{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		_ = s.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	if opts.TracerProvider == nil {
		opts.TracerProvider = s.tp
	}
	opts.MeterProvider = mp
	tel, err := otelconveyor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.tel = tel
	return s
}

// metrics collects the metrics now.
func (s *sdk) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// value is the value of the metric name's data point whose attributes
// include want (a sum or gauge; a histogram's count), and whether there is
// one.
func value(rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) (float64, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes, want) {
						return float64(p.Value), true
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes, want) {
						return float64(p.Value), true
					}
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes, want) {
						return p.Value, true
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes, want) {
						return float64(p.Count), true
					}
				}
			}
		}
	}
	return 0, false
}

func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// eventually calls cond until it returns "" or patience runs out, then
// fails with its last answer.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", patience, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
