package channelpubsub_test

import (
	"context"
	"testing"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) { pubsubtest.Run(t, harness()) }

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) { pubsubtest.Run(t, pubsubtest.Wrap(harness())) }

func harness() pubsubtest.Harness {
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{
				// The suite enqueues up to 200 messages before it dequeues;
				// the default capacity would block it (backpressure is
				// tested on its own in topic_test.go).
				Capacity:    256,
				Retry:       cfg.Retry,
				Lease:       cfg.Lease,
				MaxDataSize: cfg.MaxDataSize,
				OnFailure:   cfg.OnFailure,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			return ps
		},
		Register: func(_ testing.TB, ctx context.Context) error {
			return channelpubsub.Register(ctx)
		},
		Abilities: abilities(),
	}
}

// abilities are all but OldestReady: the ready messages wait in a Go
// channel, which cannot be looked into, so Stats.OldestReady is 0.
func abilities() pubsubtest.Abilities {
	a := pubsubtest.AllMessageAbilities()
	a.OldestReady = false
	a.FailureHook = true
	a.Quiesce = true
	return a
}
