package otelconveyor_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/natspubsub/natspubsubtest"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
	"github.com/conveyorgo/conveyor/sqlitepubsub/sqlitepubsubtest"
)

// TestConformance runs the contract's suite on each backend wrapped twice:
// by otelconveyor, with a recording meter and no tracer (the suite checks
// headers exactly, and a tracer adds traceparent to each), and over it by
// pubsubtest.Wrap, a wrapper that implements no ability itself. Neither
// wrapping changes anything else a caller can observe, every ability of the
// backend stays reachable through both, and none it lacks is claimed (the
// suite checks each ability the harness declares absent). These are the
// backends' only wrapped runs; their own tests run the suite plain, with
// the full message count of the concurrency case, which runs here with
// wrappedMessages.
func TestConformance(t *testing.T) {
	s := newSDK(t, otelconveyor.Options{StatsInterval: 1, TracerProvider: noop.NewTracerProvider()})
	channel := pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 256, Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			return ps
		},
		Register: func(_ testing.TB, ctx context.Context) error { return channelpubsub.Register(ctx) },
		Abilities: func() pubsubtest.Abilities {
			a := pubsubtest.AllMessageAbilities()
			a.OldestReady = false
			a.Quiesce = true
			return a
		}(),
	}
	for _, b := range []struct {
		name    string
		harness pubsubtest.Harness
	}{
		{"channelpubsub", channel},
		{"dbpubsub", dbpubsubtest.Harness(dbpubsub.Options{})},
		{"natspubsub", natspubsubtest.Harness(t, natspubsub.Options{})},
		// Share-group mode, the default; kafkapubsub's own tests run the
		// suite in both modes.
		{"kafkapubsub", kafkapubsubtest.Harness(t, kafkapubsub.Options{})},
		{"sqlitepubsub", sqlitepubsubtest.Harness()},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			h := b.harness
			if h.Messages == 0 || h.Messages > wrappedMessages {
				h.Messages = wrappedMessages
			}
			pubsubtest.Run(t, pubsubtest.Wrap(wrapHarness(h, s.tel)))
		})
	}
}

// wrappedMessages is the message count of the concurrency case in the
// wrapped runs: the backends' plain runs race more on more messages.
const wrappedMessages = 2000

// wrapHarness returns h with every PubSub wrapped by tel, and tel
// registered over the backend h registers.
func wrapHarness(h pubsubtest.Harness, tel *otelconveyor.Telemetry) pubsubtest.Harness {
	w := h
	w.New = func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
		return tel.Wrap(h.New(t, cfg))
	}
	if h.Reopen != nil {
		w.Reopen = func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			return tel.Wrap(h.Reopen(t, cfg, ps.(interface{ Unwrap() pubsub.PubSub }).Unwrap()))
		}
	}
	w.Register = func(t testing.TB, ctx context.Context) error {
		if err := h.Register(t, ctx); err != nil {
			return err
		}
		return tel.Register(ctx)
	}
	return w
}

// TestWrapClaimsNoAbilityTheTopicLacks wraps a natspubsub topic, which has
// no all-or-none batch: the wrapped topic must not say it has one, while it
// keeps the abilities the topic has.
func TestWrapClaimsNoAbilityTheTopicLacks(t *testing.T) {
	url := natstest.URL(t)
	ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: natstest.Prefix(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	s := newSDK(t, otelconveyor.Options{})
	raw := ps.Topic("orders")
	if _, ok := pubsub.As[pubsub.BatchEnqueuer](raw); ok {
		t.Fatal("natspubsub's topic has a BatchEnqueuer: pick a backend that lacks one for this test")
	}
	for name, tp := range map[string]pubsub.Topic{
		"WrapTopic": s.tel.WrapTopic(raw, "orders", ""),
		"Wrap":      s.tel.Wrap(ps).Topic("orders"),
		"twice":     s.tel.WrapTopic(s.tel.WrapTopic(raw, "orders", ""), "orders", ""),
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := pubsub.As[pubsub.BatchEnqueuer](tp); ok {
				t.Error("pubsub.As[BatchEnqueuer] = true on a wrapped topic whose backend has no all-or-none batch")
			}
			for ability, ok := range map[string]bool{
				"Delayer":        hasAbility[pubsub.Delayer](tp),
				"UniqueEnqueuer": hasAbility[pubsub.UniqueEnqueuer](tp),
				"DeadLetters":    hasAbility[admin.DeadLetters](tp),
				"EnqueueStarter": hasAbility[wrap.EnqueueStarter](tp), // the wrapper's own
			} {
				if !ok {
					t.Errorf("pubsub.As[%s] = false on the wrapped topic; the topic has it", ability)
				}
			}
			// The fallback of EnqueueBatch still works through the wrapper.
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("a"), []byte("b")}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func hasAbility[T any](v any) bool {
	_, ok := pubsub.As[T](v)
	return ok
}
