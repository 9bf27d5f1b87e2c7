package pubsubtest

import (
	"context"
	"io"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Wrap returns h with every PubSub it makes wrapped in the thinnest
// middleware there is: the PubSub, its topics and messages have the seed
// methods and Unwrap, nothing else. Run with it, the suite checks that a
// wrapped backend keeps every ability it declares (pubsub.As finds them
// through Unwrap: Subscriber on the PubSub, Inbox and the rest on topics),
// as tracing or metrics middleware must:
//
//	pubsubtest.Run(t, pubsubtest.Wrap(h))
//
// The handles pubsub.Subscribe returns through a wrapped PubSub come from
// the backend; the suite wraps them as the wrapper wraps its topics, as
// middleware handing them on would.
//
// Register is h's own: the injection case checks the backend's wiring.
func Wrap(h Harness) Harness {
	w := h
	w.New = func(t testing.TB, cfg Config) pubsub.PubSub {
		return &wrappedPubSub{inner: h.New(t, cfg)}
	}
	if h.Reopen != nil {
		w.Reopen = func(t testing.TB, cfg Config, ps pubsub.PubSub) pubsub.PubSub {
			inner := ps
			if wp, ok := ps.(*wrappedPubSub); ok {
				inner = wp.inner
			}
			return &wrappedPubSub{inner: h.Reopen(t, cfg, inner)}
		}
	}
	return w
}

type wrappedPubSub struct{ inner pubsub.PubSub }

func (p *wrappedPubSub) Topic(name string) pubsub.Topic {
	return &wrappedTopic{inner: p.inner.Topic(name)}
}
func (p *wrappedPubSub) Unwrap() pubsub.PubSub { return p.inner }

func (p *wrappedPubSub) Close() error {
	if c, ok := p.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// wrapSubscription wraps tp, a handle pubsub.Subscribe returned through ps,
// as ps wraps its topics when it is a wrapped PubSub.
func wrapSubscription(ps pubsub.PubSub, tp pubsub.Topic) pubsub.Topic {
	if _, ok := ps.(*wrappedPubSub); ok {
		return &wrappedTopic{inner: tp}
	}
	return tp
}

type wrappedTopic struct{ inner pubsub.Topic }

func (t *wrappedTopic) Enqueue(ctx context.Context, data []byte) error {
	return t.inner.Enqueue(ctx, data)
}

func (t *wrappedTopic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	m, err := t.inner.Dequeue(ctx)
	if err != nil {
		return nil, err
	}
	return &wrappedMessage{inner: m}, nil
}

func (t *wrappedTopic) Close() error         { return t.inner.Close() }
func (t *wrappedTopic) Unwrap() pubsub.Topic { return t.inner }

type wrappedMessage struct{ inner pubsub.Message }

func (m *wrappedMessage) ID() string                     { return m.inner.ID() }
func (m *wrappedMessage) Data() []byte                   { return m.inner.Data() }
func (m *wrappedMessage) Ack(ctx context.Context) error  { return m.inner.Ack(ctx) }
func (m *wrappedMessage) Nack(ctx context.Context) error { return m.inner.Nack(ctx) }
func (m *wrappedMessage) Unwrap() pubsub.Message         { return m.inner }
