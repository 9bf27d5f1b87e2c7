package pubsub

import (
	"context"
	"errors"
	"testing"
)

type baseTopic struct{ Topic }

func (baseTopic) Stats(context.Context) (Stats, error) { return Stats{Ready: 1}, nil }

type wrapTopic struct{ inner Topic }

func (w wrapTopic) Enqueue(ctx context.Context, d []byte) error  { return w.inner.Enqueue(ctx, d) }
func (w wrapTopic) Dequeue(ctx context.Context) (Message, error) { return w.inner.Dequeue(ctx) }
func (w wrapTopic) Close() error                                 { return w.inner.Close() }
func (w wrapTopic) Unwrap() Topic                                { return w.inner }

// interceptor wraps a topic and implements Stats itself.
type interceptor struct{ wrapTopic }

func (interceptor) Stats(context.Context) (Stats, error) { return Stats{Ready: 2}, nil }

func TestAsFindsAbilitiesThroughWrappers(t *testing.T) {
	ctx := context.Background()
	two := wrapTopic{wrapTopic{baseTopic{}}}
	if s, err := TopicStats(ctx, two); err != nil || s.Ready != 1 {
		t.Fatalf("TopicStats through two wrappers = %+v, %v; want the backend's", s, err)
	}
	if s, err := TopicStats(ctx, interceptor{wrapTopic{baseTopic{}}}); err != nil || s.Ready != 2 {
		t.Fatalf("TopicStats of a wrapper with its own Stats = %+v, %v; want the wrapper's", s, err)
	}
	if _, err := ListDead(ctx, two, 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ListDead of a backend without dead letters = %v, want ErrUnsupported", err)
	}
	if _, ok := As[Stater](nil); ok {
		t.Fatal("As of nil found something")
	}
	if _, ok := As[PubSub](wrapTopic{}); ok {
		t.Fatal("As found a PubSub in a chain of topics")
	}
}
