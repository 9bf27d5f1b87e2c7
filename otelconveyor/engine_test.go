package otelconveyor_test

import (
	"context"
	"strings"
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/minidriver"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// TestWrapOfAnEngineTopicFollowsItsStore wraps topics of the engine over a
// store without an all-or-none batch, delays or unique keys (the smallest
// driver), and over channelpubsub's store, which has them: through any
// number of wrappers, pubsub.As finds each ability exactly when the store
// has it, because the engine declares what its store lacks
// (wrap.Forwarder), and a wrapper forwards those abilities only.
func TestWrapOfAnEngineTopicFollowsItsStore(t *testing.T) {
	mini, err := engine.New(minidriver.New(), engine.Options{Name: "minidriver"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mini.Close() })
	channel := channelpubsub.New()
	t.Cleanup(func() { _ = channel.Close() })
	s := newSDK(t, otelconveyor.Options{})

	for _, c := range []struct {
		name  string
		ps    pubsub.PubSub
		store bool // the store has batches, delays and unique keys
	}{{"minidriver", mini, false}, {"channelpubsub", channel, true}} {
		raw := c.ps.Topic("orders")
		for name, tp := range map[string]pubsub.Topic{
			"WrapTopic": s.tel.WrapTopic(raw, "orders", ""),
			"Wrap":      s.tel.Wrap(c.ps).Topic("orders"),
			"twice":     s.tel.WrapTopic(s.tel.WrapTopic(raw, "orders", ""), "orders", ""),
		} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				for ability, ok := range map[string]bool{
					"BatchEnqueuer":  hasAbility[pubsub.BatchEnqueuer](tp),
					"Delayer":        hasAbility[pubsub.Delayer](tp),
					"UniqueEnqueuer": hasAbility[pubsub.UniqueEnqueuer](tp),
					"DeadLetters":    hasAbility[admin.DeadLetters](tp),
				} {
					if ok != c.store {
						t.Errorf("pubsub.As[%s] = %v on the wrapped topic; its store has it: %v", ability, ok, c.store)
					}
				}
				if !hasAbility[wrap.EnqueueStarter](tp) {
					t.Error("pubsub.As[EnqueueStarter] = false; the wrapper has it")
				}
				// EnqueueBatch is all or none through the store's batch, or
				// falls back to one Enqueue per item.
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				defer cancel()
				if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("a"), []byte("b")}); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"a", "b"} {
					m, err := tp.Dequeue(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if string(m.Data()) != want {
						t.Errorf("Dequeue = %q, want %q", m.Data(), want)
					}
					if err := m.Ack(ctx); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestWrapKeepsTheSpeedups: the event layer's speed-ups of channelpubsub's
// topics and messages (wrap.OwnedEnqueuer, wrap.IDAppender) are found
// through the wrapper, which forwards them, and give what the plain
// methods give.
func TestWrapKeepsTheSpeedups(t *testing.T) {
	channel := channelpubsub.New()
	t.Cleanup(func() { _ = channel.Close() })
	s := newSDK(t, otelconveyor.Options{})
	tp := s.tel.Wrap(channel).Topic("orders")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	o, ok := wrap.FindSpeedup[wrap.OwnedEnqueuer](tp)
	if !ok {
		t.Fatal("wrap.FindSpeedup[OwnedEnqueuer] = false on a wrapped channelpubsub topic")
	}
	if err := o.EnqueueOwned(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := wrap.FindSpeedup[wrap.IDAppender](m)
	if !ok {
		t.Fatal("wrap.FindSpeedup[IDAppender] = false on a wrapped channelpubsub message")
	}
	if got := string(a.AppendID([]byte("id "))); got != "id "+m.ID() || string(m.Data()) != "a" {
		t.Errorf("AppendID = %q, data %q; want %q, %q", got, m.Data(), "id "+m.ID(), "a")
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := value(s.metrics(t), "messaging.client.sent.messages", semconv.MessagingDestinationName("orders")); n != 1 {
		t.Errorf("messaging.client.sent.messages = %v after one EnqueueOwned, want 1", n)
	}
}

// TestRegisterObservesAnEngine: through Register, a backend built on the
// engine is observed by it, not wrapped (the injector's PubSub is the
// backend's own), and still traced: a message's process span is a child
// of its send span, and its outcome is the engine's. A backend whose
// Register does not pass the engine its observer (dbpubsub's, today) is
// wrapped, and traced the same.
func TestRegisterObservesAnEngine(t *testing.T) {
	eachBackend(t, func(t *testing.T, register func(*testing.T, context.Context)) {
		s := newSDK(t, otelconveyor.Options{})
		ctx := newInjector(t, register, s)
		ps, err := di.Resolve[pubsub.PubSub](ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, wrapped := ps.(interface{ Unwrap() pubsub.PubSub })
		_, engine := ps.(interface{ Observed() bool })
		if wrapped == engine {
			t.Fatalf("the injector's PubSub is %T: wrapped %v, an engine %v; want one or the other", ps, wrapped, engine)
		}
		if onEngine := strings.Contains(t.Name(), "channelpubsub") || strings.Contains(t.Name(), "natspubsub"); onEngine && !engine {
			t.Fatalf("the injector's PubSub is %T, want the engine backend's own, observed", ps)
		}
		tp := ps.Topic("orders")
		t.Cleanup(func() { _ = tp.Close() })
		dctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := tp.Enqueue(dctx, []byte("a")); err != nil {
			t.Fatal(err)
		}
		m, err := tp.Dequeue(dctx)
		if err != nil {
			t.Fatal(err)
		}
		if !trace.SpanContextFromContext(pubsub.HandlingContext(dctx, m)).IsValid() {
			t.Error("the delivery's handling context has no span")
		}
		if err := m.Ack(dctx); err != nil {
			t.Fatal(err)
		}
		send, process := spansNamed(s.spans.Ended(), "send orders"), spansNamed(s.spans.Ended(), "process orders")
		if len(send) != 1 || len(process) != 1 {
			t.Fatalf("%d send and %d process spans ended, want 1 and 1", len(send), len(process))
		}
		if process[0].Parent().SpanID() != send[0].SpanContext().SpanID() {
			t.Error("the process span is not a child of the send span")
		}
		if got := attr(process[0], "conveyor.settle.outcome"); got != otelconveyor.OutcomeAck {
			t.Errorf("conveyor.settle.outcome = %q, want %q", got, otelconveyor.OutcomeAck)
		}
	})
}
