package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/conveyorgo/conveyor/otelconveyor"
)

// serviceName is the service.name of the app's metrics and traces, unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise. Name it after your service.
const serviceName = "shop"

// Telemetry is the app's OpenTelemetry set-up: metrics always, shown in
// the Prometheus text format by GET /metrics; traces only when an OTLP
// endpoint is configured (Config.OTLPEndpoint), sent there over
// OTLP/HTTP. Conveyor (the backend and the event services, through
// otelconveyor) and the HTTP server (otelhttp) report to it. Make it with
// newTelemetry; Shutdown sends what is buffered and stops it.
type Telemetry struct {
	conveyor *otelconveyor.Telemetry
	registry *prometheus.Registry     // what GET /metrics shows
	meters   *sdkmetric.MeterProvider // reports to registry
	tracers  *sdktrace.TracerProvider // nil when tracing is off
}

// newTelemetry builds the app's metrics and, if cfg.OTLPEndpoint is set,
// its tracing. It also sets the process's OpenTelemetry propagator to W3C
// Trace Context and Baggage: a trace and its baggage arrive in HTTP
// headers, go into each message's header, and come out in the listeners.
func newTelemetry(ctx context.Context, cfg Config, log *slog.Logger) (*Telemetry, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	// What every metric and span says of where it comes from: service.name,
	// then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (which win), and
	// the SDK's name and version.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}

	// Metrics: an SDK MeterProvider read by the Prometheus exporter into a
	// registry of the app's own (not the process-wide default one), with the
	// Go runtime's and the process's collectors beside it. To push metrics
	// over OTLP instead, use a PeriodicReader on an OTLP metric exporter.
	t := &Telemetry{registry: prometheus.NewRegistry()}
	if err := t.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if err := t.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(t.registry))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res))

	// Traces, only when there is somewhere to send them: otherwise conveyor
	// and otelhttp stay on OpenTelemetry's global TracerProvider, a no-op
	// unless your code sets one, and spans cost nothing. The exporter reads
	// the OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers,
	// timeout), the batch processor OTEL_BSP_*, the sampler
	// OTEL_TRACES_SAMPLER.
	if cfg.OTLPEndpoint != "" {
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("telemetry: OTLP trace exporter: %w", err), t.meters.Shutdown(ctx))
		}
		t.tracers = sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
		log.Info("tracing on: spans go over OTLP/HTTP", "endpoint", cfg.OTLPEndpoint)
	}

	opts := otelconveyor.Options{MeterProvider: t.meters}
	if t.tracers != nil {
		opts.TracerProvider = t.tracers
	}
	if t.conveyor, err = otelconveyor.New(opts); err != nil {
		return nil, errors.Join(err, t.Shutdown(ctx))
	}
	return t, nil
}

// MetricsHandler serves the app's metrics in the Prometheus text format
// (GET /metrics).
func (t *Telemetry) MetricsHandler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	})
}

// Instrument returns h measured, and traced when tracing is on: each
// request is a server span, the parent of the spans of the events it
// dispatches, and continues the trace of a caller that sends a
// traceparent header. Scrapes of /metrics and health checks are left out.
func (t *Telemetry) Instrument(h http.Handler) http.Handler {
	opts := []otelhttp.Option{
		otelhttp.WithMeterProvider(t.meters),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/metrics" && r.URL.Path != "/healthz"
		}),
	}
	if t.tracers != nil {
		opts = append(opts, otelhttp.WithTracerProvider(t.tracers))
	}
	return otelhttp.NewHandler(h, "http", opts...)
}

// Shutdown sends the spans still buffered and stops the providers, within
// ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.tracers != nil {
		errs = append(errs, t.tracers.Shutdown(ctx))
	}
	errs = append(errs, t.meters.Shutdown(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}
