package otelconveyor_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// TestConformance runs the contract's suite on a wrapped backend, with a
// recording meter and no tracer (the suite checks headers exactly, and a
// tracer adds traceparent to each): the wrapping changes nothing else a
// caller can observe, and every ability stays reachable.
func TestConformance(t *testing.T) {
	s := newSDK(t, otelconveyor.Options{StatsInterval: 1, TracerProvider: noop.NewTracerProvider()})
	pubsubtest.Run(t, pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 256, Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize})
			if err != nil {
				t.Fatal(err)
			}
			w := s.tel.Wrap(ps)
			t.Cleanup(func() { _ = w.(interface{ Close() error }).Close() })
			return w
		},
		Register: func(_ testing.TB, ctx context.Context) error {
			if err := channelpubsub.Register(ctx); err != nil {
				return err
			}
			return s.tel.Register(ctx)
		},
		Abilities: func() pubsubtest.Abilities {
			a := pubsubtest.AllMessageAbilities()
			a.OldestReady = false
			return a
		}(),
	})
}
