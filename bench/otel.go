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

// otelConfig describes the SDK of the OTel systems, for their
// configurations.
const otelConfig = "its PubSub wrapped by otelconveyor.New(Options{}).Wrap on the OpenTelemetry SDK: " +
	"sdktrace.NewTracerProvider(WithBatcher(an exporter that drops the spans)) with the default sampler, " +
	"ParentBased(AlwaysSample), so every message is sampled (the worst case); " +
	"sdkmetric.NewMeterProvider(WithReader(NewManualReader())), never collected; consumers handle each message in pubsub.HandlingContext"

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

func newOTelSDK() (*otelSDK, error) {
	s := &otelSDK{
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{})),
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
