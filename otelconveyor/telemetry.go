package otelconveyor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of conveyor's spans and metrics.
const ScopeName = "github.com/conveyorgo/conveyor/otelconveyor"

// System is the messaging.system attribute of every span and metric.
const System = "conveyor"

// DefaultStatsInterval is how long the queue gauges reuse the counts they
// read (Options.StatsInterval).
const DefaultStatsInterval = 10 * time.Second

// statsTimeout bounds the reading of one topic's counts for the gauges.
const statsTimeout = 5 * time.Second

// Options configures a Telemetry. The zero value means the OpenTelemetry
// globals (otel.GetTracerProvider, otel.GetMeterProvider,
// otel.GetTextMapPropagator) and the defaults.
type Options struct {
	// TracerProvider makes the spans. nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator writes a message's trace context into its header and
	// reads it back. nil means otel.GetTextMapPropagator() if it
	// propagates anything, else W3C Trace Context (traceparent,
	// tracestate), so that traces cross topics without more set-up.
	Propagator propagation.TextMapPropagator
	// StatsInterval is how long the queue gauges (ready, scheduled,
	// processing, dead, oldest ready age) reuse the counts they read: a
	// collection reads each topic's Stats at most once per interval,
	// never per message. 0 means DefaultStatsInterval; a negative value
	// turns the gauges off.
	StatsInterval time.Duration
}

// Telemetry traces and measures the PubSubs it wraps (Wrap) and the event
// Services it is middleware of (Middleware). Make one per app with New; it
// is safe for concurrent use.
type Telemetry struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	w3c        bool // propagator is W3C Trace Context alone: its traceparent is a valid header as made
	interval   time.Duration
	stats      *statsCollector

	counters     counters
	sendDuration metric.Float64Histogram
	processTime  metric.Float64Histogram
}

// New returns a Telemetry on opts' providers. It fails only if an
// instrument cannot be made.
func New(opts Options) (*Telemetry, error) {
	tp, mp, prop := opts.TracerProvider, opts.MeterProvider, opts.Propagator
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
		if len(prop.Fields()) == 0 {
			prop = propagation.TraceContext{}
		}
	}
	if opts.StatsInterval == 0 {
		opts.StatsInterval = DefaultStatsInterval
	}
	m := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	t := &Telemetry{
		tracer:     tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: prop,
		w3c:        isW3C(prop),
		interval:   opts.StatsInterval,
	}
	var errs []error
	seconds := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
		errs = append(errs, err)
		return h
	}
	errs = append(errs, t.counters.register(m))
	t.sendDuration = seconds("messaging.client.operation.duration", "Duration of an enqueue (publish), by topic.")
	t.processTime = seconds("messaging.process.duration", "Duration of the handling of a delivery, from its dequeue to its settlement, by topic and subscription.")
	if opts.StatsInterval > 0 {
		t.stats = newStatsCollector(opts.StatsInterval)
		errs = append(errs, t.stats.register(m))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelconveyor: %w", err)
	}
	return t, nil
}

// attrs are the attributes of one subscription of a topic: of its spans,
// and, as a set made once, of its metrics. The options are made once too,
// so that a measurement allocates no variadic slice.
type attrs struct {
	topic, sub string
	span       []attribute.KeyValue  // system, destination (and subscription)
	record     []metric.RecordOption // the set, for a histogram
	counts     *counts               // its message counts, once counted (Telemetry.counted)
}

func newAttrs(topic, sub string) *attrs {
	a := &attrs{topic: topic, sub: sub, span: []attribute.KeyValue{
		semconv.MessagingSystemKey.String(System),
		semconv.MessagingDestinationName(topic),
	}}
	if sub != "" {
		a.span = append(a.span, semconv.MessagingConsumerGroupName(sub))
	}
	set := metric.WithAttributeSet(attribute.NewSet(a.span...))
	a.record = []metric.RecordOption{set}
	return a
}

// counted returns a with its counts, shared by every handle on the same
// topic or subscription.
func (t *Telemetry) counted(a *attrs) *attrs {
	a.counts = t.counters.of(a.topic, a.sub, a.span)
	return a
}

// exemplarContext is the ctx a measurement of span's operation is
// recorded with: ctx, which carries span, when span records, so that the
// SDK can keep the measurement as an exemplar of its trace; else none,
// which spares the SDK a search of ctx for a span it would not keep (its
// default filter keeps exemplars of sampled spans only).
func exemplarContext(ctx context.Context, span trace.Span) context.Context {
	if span.IsRecording() {
		return ctx
	}
	return context.Background()
}

// isW3C reports whether prop is the W3C Trace Context propagator alone.
func isW3C(prop propagation.TextMapPropagator) bool {
	_, ok := prop.(propagation.TraceContext)
	return ok
}
