package wrap_test

import (
	"context"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// ownedTopic is a topic with the copy-free enqueue.
type ownedTopic struct{ pubsub.Topic }

func (ownedTopic) EnqueueOwned(context.Context, []byte) error { return nil }

// ownedForwarder wraps a topic and forwards EnqueueOwned, declaring so.
type ownedForwarder struct{ wrapTopic }

func (f ownedForwarder) EnqueueOwned(ctx context.Context, d []byte) error {
	if o, ok := wrap.FindSpeedup[wrap.OwnedEnqueuer](f.inner); ok {
		return o.EnqueueOwned(ctx, d)
	}
	return f.inner.Enqueue(ctx, d)
}

func (ownedForwarder) Forwards(ability any) bool {
	_, ok := ability.(*wrap.OwnedEnqueuer)
	return ok
}

// TestFindSpeedupNeverSkipsAWrapper: a speed-up is found on the value
// itself, through wrappers that forward it, and never below a wrapper that
// lacks it (whose own Enqueue must run), where pubsub.As would find it.
func TestFindSpeedupNeverSkipsAWrapper(t *testing.T) {
	for _, c := range []struct {
		name string
		tp   pubsub.Topic
		want bool
	}{
		{"the topic's own", ownedTopic{}, true},
		{"a topic without", baseTopic{}, false},
		{"through a forwarder", ownedForwarder{wrapTopic{ownedTopic{}}}, true},
		{"through two forwarders", ownedForwarder{wrapTopic{ownedForwarder{wrapTopic{ownedTopic{}}}}}, true},
		{"a forwarder over a topic without", ownedForwarder{wrapTopic{baseTopic{}}}, false},
		{"below a wrapper without", wrapTopic{ownedTopic{}}, false},
		{"a forwarder below a wrapper without", wrapTopic{ownedForwarder{wrapTopic{ownedTopic{}}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := wrap.FindSpeedup[wrap.OwnedEnqueuer](c.tp); ok != c.want {
				t.Errorf("wrap.FindSpeedup[wrap.OwnedEnqueuer] = %v, want %v", ok, c.want)
			}
		})
	}
	if _, ok := pubsub.As[wrap.OwnedEnqueuer](wrapTopic{ownedTopic{}}); !ok {
		t.Error("pubsub.As[wrap.OwnedEnqueuer] below a plain wrapper = false: the case above checks nothing pubsub.As would not")
	}
}
