package main

import (
	"context"
	"errors"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/conveyorgo/conveyor/otelconveyor"
)

// The "(OTel)" systems are conveyor's with the PubSub wrapped by
// otelconveyor (Telemetry.Wrap), on the OpenTelemetry SDK as an app runs
// it, exporting to nowhere: the SDK does all its work but the export.
// Each is compared with the same system unwrapped in the same run (the
// OTel overhead targets).

// otelMode says whether a conveyor system is wrapped by otelconveyor, and
// how its SDK samples.
type otelMode int

const (
	otelOff otelMode = iota
	// otelAll samples every message: the SDK's default sampler,
	// ParentBased(AlwaysSample), the worst case.
	otelAll
	// otelSampled samples 1% of the traces: ParentBased(TraceIDRatioBased(0.01)),
	// a production setting; the others' spans are made but not recorded.
	otelSampled
)

// sampledRatio is the ratio of otelSampled.
const sampledRatio = 0.01

// suffix ends the name of a system in mode m.
func (m otelMode) suffix() string {
	switch m {
	case otelAll:
		return " (OTel)"
	case otelSampled:
		return " (OTel 1%)"
	}
	return ""
}

// config describes the SDK of mode m, for the systems' configurations.
func (m otelMode) config() string {
	sampler := "the default sampler, ParentBased(AlwaysSample), so every message is sampled (the worst case)"
	if m == otelSampled {
		sampler = "sdktrace.WithSampler(ParentBased(TraceIDRatioBased(0.01))): 1% of the traces sampled, the others' spans made but not recorded"
	}
	return "its PubSub wrapped by otelconveyor.New(Options{}).Wrap on the OpenTelemetry SDK: " +
		"sdktrace.NewTracerProvider(WithBatcher(an exporter that drops the spans)) with " + sampler + "; " +
		"sdkmetric.NewMeterProvider(WithReader(NewManualReader())), never collected; consumers handle each message in pubsub.HandlingContext"
}

// discardExporter drops every span it is given.
type discardExporter struct{}

var _ sdktrace.SpanExporter = discardExporter{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// otelSDK is the SDK of one instance of an OTel system, and the Telemetry
// on it.
type otelSDK struct {
	tp  *sdktrace.TracerProvider
	mp  *sdkmetric.MeterProvider
	tel *otelconveyor.Telemetry
}

func newOTelSDK(m otelMode) (*otelSDK, error) {
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(discardExporter{})}
	if m == otelSampled {
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(sampledRatio))))
	}
	s := &otelSDK{
		tp: sdktrace.NewTracerProvider(tpOpts...),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
	}
	tel, err := otelconveyor.New(otelconveyor.Options{TracerProvider: s.tp, MeterProvider: s.mp})
	if err != nil {
		return nil, errors.Join(err, s.shutdown())
	}
	s.tel = tel
	return s, nil
}

// shutdown stops the SDK's span processor and meter provider.
func (s *otelSDK) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(s.tp.Shutdown(ctx), s.mp.Shutdown(ctx))
}
