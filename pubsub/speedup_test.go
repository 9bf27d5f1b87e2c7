package pubsub

import (
	"context"
	"testing"
)

// ownedTopic is a topic with the copy-free enqueue.
type ownedTopic struct{ Topic }

func (ownedTopic) EnqueueOwned(context.Context, []byte) error { return nil }

// ownedForwarder wraps a topic and forwards EnqueueOwned, declaring so.
type ownedForwarder struct{ wrapTopic }

func (f ownedForwarder) EnqueueOwned(ctx context.Context, d []byte) error {
	if o, ok := FindSpeedup[OwnedEnqueuer](f.inner); ok {
		return o.EnqueueOwned(ctx, d)
	}
	return f.inner.Enqueue(ctx, d)
}

func (ownedForwarder) Forwards(ability any) bool {
	_, ok := ability.(*OwnedEnqueuer)
	return ok
}

// TestFindSpeedupNeverSkipsAWrapper: a speed-up is found on the value
// itself, through wrappers that forward it, and never below a wrapper that
// lacks it (whose own Enqueue must run), where As would find it.
func TestFindSpeedupNeverSkipsAWrapper(t *testing.T) {
	for _, c := range []struct {
		name string
		tp   Topic
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
			if _, ok := FindSpeedup[OwnedEnqueuer](c.tp); ok != c.want {
				t.Errorf("FindSpeedup[OwnedEnqueuer] = %v, want %v", ok, c.want)
			}
		})
	}
	if _, ok := As[OwnedEnqueuer](wrapTopic{ownedTopic{}}); !ok {
		t.Error("As[OwnedEnqueuer] below a plain wrapper = false: the case above checks nothing As would not")
	}
}
