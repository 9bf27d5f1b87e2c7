package event_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	internalbackend "github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// idPrefix is what renamingPubSub's messages put before their IDs.
const idPrefix = "renamed-"

// renamingPubSub wraps a PubSub whose topics count their enqueues and
// whose messages have IDs of their own. Its topics and messages unwrap
// (pubsub.As looks below them) and have no speed-up of their own.
type renamingPubSub struct {
	inner    pubsub.PubSub
	enqueues *atomic.Int64
}

func (p renamingPubSub) Topic(name string) pubsub.Topic {
	return renamingTopic{inner: p.inner.Topic(name), enqueues: p.enqueues}
}
func (p renamingPubSub) Close() error {
	if c, ok := p.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type renamingTopic struct {
	inner    pubsub.Topic
	enqueues *atomic.Int64
}

func (t renamingTopic) Enqueue(ctx context.Context, d []byte) error {
	t.enqueues.Add(1)
	return t.inner.Enqueue(ctx, d)
}
func (t renamingTopic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	m, err := t.inner.Dequeue(ctx)
	if err != nil {
		return nil, err
	}
	return renamingMessage{m}, nil
}
func (t renamingTopic) Close() error         { return t.inner.Close() }
func (t renamingTopic) Unwrap() pubsub.Topic { return t.inner }

type renamingMessage struct{ pubsub.Message }

func (m renamingMessage) ID() string             { return idPrefix + m.Message.ID() }
func (m renamingMessage) Unwrap() pubsub.Message { return m.Message }

// TestSpeedupsNeverSkipAWrapper: channelpubsub's topics and messages have
// the speed-ups (wrap.OwnedEnqueuer, wrap.IDAppender), but under a
// wrapper without them the event layer calls the wrapper's Enqueue and
// reports the wrapper's message ID: slower, not wrong.
func TestSpeedupsNeverSkipAWrapper(t *testing.T) {
	ctx := di.NewContext(context.Background())
	t.Cleanup(func() { _ = di.Shutdown(ctx) })
	var enqueues atomic.Int64
	if err := channelpubsub.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := internalbackend.RegisterWrapper(ctx, func(ps pubsub.PubSub) pubsub.PubSub {
		return renamingPubSub{inner: ps, enqueues: &enqueues}
	}); err != nil {
		t.Fatal(err)
	}
	if err := event.Register(ctx); err != nil {
		t.Fatal(err)
	}
	svc, err := event.NewService("orders", event.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make(chan string, 1)
	if err := event.ListenFunc(svc, func(ctx context.Context, _ OrderPlaced) error {
		md, _ := event.Meta(ctx)
		ids <- md.MessageID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := di.ResolveNamed[event.Dispatcher](ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if n := enqueues.Load(); n != 1 {
		t.Errorf("the wrapper's Enqueue ran %d times for one Dispatch, want 1", n)
	}
	select {
	case id := <-ids:
		if !strings.HasPrefix(id, idPrefix) {
			t.Errorf("Metadata.MessageID = %q, want the wrapper's ID (prefixed %q)", id, idPrefix)
		}
	case <-time.After(patience):
		t.Fatal("the event was not handled")
	}
}
