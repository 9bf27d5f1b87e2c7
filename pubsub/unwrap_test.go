package pubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

type baseTopic struct{ pubsub.Topic }

func (baseTopic) Stats(context.Context) (admin.Stats, error) { return admin.Stats{Ready: 1}, nil }

type wrapTopic struct{ inner pubsub.Topic }

func (w wrapTopic) Enqueue(ctx context.Context, d []byte) error         { return w.inner.Enqueue(ctx, d) }
func (w wrapTopic) Dequeue(ctx context.Context) (pubsub.Message, error) { return w.inner.Dequeue(ctx) }
func (w wrapTopic) Close() error                                        { return w.inner.Close() }
func (w wrapTopic) Unwrap() pubsub.Topic                                { return w.inner }

// interceptor wraps a topic and implements Stats itself.
type interceptor struct{ wrapTopic }

func (interceptor) Stats(context.Context) (admin.Stats, error) { return admin.Stats{Ready: 2}, nil }

func TestAsFindsAbilitiesThroughWrappers(t *testing.T) {
	ctx := context.Background()
	two := wrapTopic{wrapTopic{baseTopic{}}}
	if s, err := admin.TopicStats(ctx, two); err != nil || s.Ready != 1 {
		t.Fatalf("TopicStats through two wrappers = %+v, %v; want the backend's", s, err)
	}
	if s, err := admin.TopicStats(ctx, interceptor{wrapTopic{baseTopic{}}}); err != nil || s.Ready != 2 {
		t.Fatalf("TopicStats of a wrapper with its own Stats = %+v, %v; want the wrapper's", s, err)
	}
	if _, err := admin.ListDead(ctx, two, 0); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Fatalf("ListDead of a backend without dead letters = %v, want ErrUnsupported", err)
	}
	if _, ok := pubsub.As[admin.Stater](nil); ok {
		t.Fatal("As of nil found something")
	}
	if _, ok := pubsub.As[pubsub.PubSub](wrapTopic{}); ok {
		t.Fatal("As found a PubSub in a chain of topics")
	}
}

// forwarder wraps a topic and implements Stats and Delayer only to
// forward them (it would trace them), declaring so (wrap.Forwarder).
type forwarder struct{ wrapTopic }

var _ wrap.Forwarder = forwarder{}

func (f forwarder) Stats(ctx context.Context) (admin.Stats, error) {
	return admin.TopicStats(ctx, f.inner)
}
func (f forwarder) EnqueueAt(ctx context.Context, d []byte, at time.Time) error {
	return pubsub.EnqueueAt(ctx, f.inner, d, at)
}
func (forwarder) Forwards(ability any) bool {
	switch ability.(type) {
	case *admin.Stater, *pubsub.Delayer:
		return true
	}
	return false
}

// carrier is a forwarder with an ability of its own (not forwarded).
type carrier struct{ forwarder }

func (carrier) Context(ctx context.Context) context.Context { return ctx }

func TestAsDoesNotLetAForwarderClaimWhatItWrapsLacks(t *testing.T) {
	ctx := context.Background()
	// baseTopic has Stats and no Delayer.
	for name, tp := range map[string]pubsub.Topic{
		"one forwarder":      forwarder{wrapTopic{baseTopic{}}},
		"forwarder of one":   forwarder{wrapTopic{forwarder{wrapTopic{baseTopic{}}}}},
		"plain over forward": wrapTopic{forwarder{wrapTopic{baseTopic{}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok := pubsub.As[pubsub.Delayer](tp); ok {
				t.Error("As[Delayer] = true through a forwarder over a topic without delays")
			}
			if err := pubsub.EnqueueAt(ctx, tp, nil, time.Now()); !errors.Is(err, pubsub.ErrUnsupported) {
				t.Errorf("EnqueueAt = %v, want ErrUnsupported", err)
			}
			s, ok := pubsub.As[admin.Stater](tp)
			if !ok {
				t.Fatal("As[Stater] = false, but the backend has Stats")
			}
			if _, isFwd := s.(forwarder); !isFwd && name != "plain over forward" {
				t.Errorf("As[Stater] found %T, want the forwarder (it observes the call)", s)
			}
			if st, err := admin.TopicStats(ctx, tp); err != nil || st.Ready != 1 {
				t.Errorf("TopicStats = %+v, %v; want the backend's", st, err)
			}
		})
	}
	// An ability the wrapper does not forward is its own.
	if _, ok := pubsub.As[wrap.ContextCarrier](carrier{forwarder{wrapTopic{baseTopic{}}}}); !ok {
		t.Error("As[ContextCarrier] = false for a wrapper's own ability")
	}
}
