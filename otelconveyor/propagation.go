package otelconveyor

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/internal/headerctx"
	"github.com/conveyorgo/conveyor/pubsub"
)

// headerCarrier carries a trace context in a message's header.
type headerCarrier pubsub.Header

var _ propagation.TextMapCarrier = headerCarrier(nil)

func (h headerCarrier) Get(key string) string { return h[key] }

func (h headerCarrier) Set(key, value string) { h[key] = value }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// inject returns ctx asking its enqueues to write its span's trace context
// into their messages' headers (and, through the event package, into
// each event's CloudEvents attributes). Without a valid span it is ctx.
func (t *Telemetry) inject(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	h := make(pubsub.Header, 2)
	t.propagator.Inject(ctx, headerCarrier(h))
	if len(h) == 0 {
		return ctx
	}
	if old, _ := headerctx.From(ctx); len(old) > 0 {
		return pubsub.WithHeader(ctx, h) // merged over the caller's
	}
	// h is this enqueue's own and nothing changes it from here: ctx keeps
	// it as it is, where pubsub.WithHeader would keep a copy. A lone
	// traceparent of the W3C propagator is valid as it is made.
	if t.w3c && len(h) == 1 && h["traceparent"] != "" {
		return context.WithValue(ctx, headerctx.Key{}, headerctx.Checked(h))
	}
	return context.WithValue(ctx, headerctx.Key{}, map[string]string(h))
}

// extensionCarrier reads a trace context from an event's CloudEvents
// extension attributes (traceparent, tracestate: the distributed tracing
// extension), whose values are JSON strings.
type extensionCarrier map[string]json.RawMessage

var _ propagation.TextMapCarrier = extensionCarrier(nil)

func (e extensionCarrier) Get(key string) string {
	var s string
	if json.Unmarshal(e[key], &s) != nil {
		return ""
	}
	return s
}

func (e extensionCarrier) Set(string, string) {}

func (e extensionCarrier) Keys() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	return keys
}
