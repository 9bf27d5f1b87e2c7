package wrap_test

import (
	"context"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

type ctxKey struct{}

// plainMessage is a delivery without a handling context.
type plainMessage struct{ pubsub.Message }

// carrying is a delivery with a handling context of its own.
type carrying struct{ pubsub.Message }

func (carrying) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, "backend")
}

// tracing wraps a delivery and implements Context only to add to the
// wrapped one's, declaring so (wrap.Forwarder).
type tracing struct{ inner pubsub.Message }

var (
	_ wrap.ContextCarrier = tracing{}
	_ wrap.Forwarder      = tracing{}
)

func (w tracing) ID() string                     { return w.inner.ID() }
func (w tracing) Data() []byte                   { return w.inner.Data() }
func (w tracing) Ack(ctx context.Context) error  { return w.inner.Ack(ctx) }
func (w tracing) Nack(ctx context.Context) error { return w.inner.Nack(ctx) }
func (w tracing) Unwrap() pubsub.Message         { return w.inner }
func (w tracing) Context(ctx context.Context) context.Context {
	return context.WithValue(pubsub.HandlingContext(ctx, w.inner), ctxKey{}, "wrapper")
}
func (tracing) Forwards(ability any) bool {
	_, ok := ability.(*wrap.ContextCarrier)
	return ok
}

// TestHandlingContextHonoursForwarder: pubsub.HandlingContext, which
// cannot import this package, asks for the same type as
// wrap.ContextCarrier, so a wrapper that forwards (*wrap.ContextCarrier)
// is used only over a delivery that carries a context.
func TestHandlingContextHonoursForwarder(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		m    pubsub.Message
		want any
	}{
		{"a plain delivery", plainMessage{}, nil},
		{"a carrying delivery", carrying{}, "backend"},
		{"a forwarder over a plain delivery", tracing{plainMessage{}}, nil},
		{"a forwarder over a carrying delivery", tracing{carrying{}}, "wrapper"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pubsub.HandlingContext(ctx, c.m).Value(ctxKey{}); got != c.want {
				t.Errorf("HandlingContext carries %v, want %v", got, c.want)
			}
		})
	}
}
