package otelconveyor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/otelconveyor"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Order is the event of the tests: Kind says how its listener behaves.
type Order struct {
	N    int    `json:"n"`
	Kind string `json:"kind"` // "ok", "retry" (fails its first attempt), "dead" (always fails)
}

func (Order) Type() event.EventType { return "com.example.order" }

// handled is what the listener saw of one delivery.
type handled struct {
	order       Order
	attempt     int
	span        trace.SpanContext
	traceparent string
}

// TestEventTrace follows five HTTP requests, each dispatching an event,
// to the listener, through the backend, and checks the spans of each
// trace and the metrics after the known sequence: three events acked, one
// failed once then acked, one failed until dead.
func TestEventTrace(t *testing.T) {
	eachBackend(t, func(t *testing.T, register func(*testing.T, context.Context)) {
		s := newSDK(t, otelconveyor.Options{StatsInterval: 1})
		ctx := newInjector(t, register, s)
		if err := event.Register(ctx); err != nil {
			t.Fatal(err)
		}
		svc, err := event.NewService("orders", event.ServiceOptions{
			Workers:    2,
			Middleware: []event.Middleware{s.tel.Middleware()},
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu   sync.Mutex
			seen []handled
		)
		err = event.ListenFunc(svc, func(ctx context.Context, o Order) error {
			md, _ := event.Meta(ctx)
			tp, _ := md.Extension("traceparent")
			mu.Lock()
			seen = append(seen, handled{o, md.Attempt, trace.SpanContextFromContext(ctx), tp})
			mu.Unlock()
			switch {
			case o.Kind == "dead", o.Kind == "retry" && md.Attempt == 1:
				return fmt.Errorf("order %d failed on attempt %d", o.N, md.Attempt)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		orders, err := di.ResolveNamed[event.Dispatcher](ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}

		// A real HTTP round trip, traced on both sides as an app's would be.
		prop := propagation.TraceContext{}
		srv := httptest.NewServer(otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			if err := orders.Dispatch(r.Context(), Order{N: n, Kind: r.URL.Query().Get("kind")}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}), "POST /orders", otelhttp.WithTracerProvider(s.tp), otelhttp.WithPropagators(prop)))
		t.Cleanup(srv.Close)
		client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(s.tp), otelhttp.WithPropagators(prop))}
		t.Cleanup(client.CloseIdleConnections)

		kinds := []string{"ok", "ok", "ok", "retry", "dead"}
		traceOf := map[int]trace.TraceID{} // order -> the trace of its request
		for n, kind := range kinds {
			rctx, root := s.tp.Tracer("test").Start(context.Background(), "user "+strconv.Itoa(n))
			req, _ := http.NewRequestWithContext(rctx, http.MethodPost, fmt.Sprintf("%s/orders?n=%d&kind=%s", srv.URL, n, kind), nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			root.End()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("order %d: HTTP %d", n, resp.StatusCode)
			}
			traceOf[n] = root.SpanContext().TraceID()
		}

		topic := attribute.String("messaging.destination.name", "orders")
		group := attribute.String("messaging.consumer.group.name", pubsub.DefaultSubscription)
		eventually(t, func() string {
			rm := s.metrics(t)
			acked, _ := value(rm, "conveyor.messages.acked", topic, group)
			dead, _ := value(rm, "conveyor.messages.dead", topic, group)
			ended := len(spansNamed(s.spans.Ended(), "process orders"))
			if acked != 4 || dead != 1 || ended != 7 {
				return fmt.Sprintf("acked %v, dead %v, process spans ended %d; want 4, 1, 7", acked, dead, ended)
			}
			return ""
		})

		// The metrics of the sequence, exactly.
		rm := s.metrics(t)
		for _, c := range []struct {
			name  string
			attrs []attribute.KeyValue
			want  float64
		}{
			{"messaging.client.sent.messages", []attribute.KeyValue{topic}, 5},
			{"messaging.client.operation.duration", []attribute.KeyValue{topic}, 5}, // its count
			{"messaging.client.consumed.messages", []attribute.KeyValue{topic, group}, 7},
			{"conveyor.messages.acked", []attribute.KeyValue{topic, group}, 4},
			{"conveyor.messages.nacked", []attribute.KeyValue{topic, group}, 2},
			{"conveyor.messages.dead", []attribute.KeyValue{topic, group}, 1},
			{"messaging.process.duration", []attribute.KeyValue{topic, group}, 7}, // its count
		} {
			if got, ok := value(rm, c.name, c.attrs...); !ok || got != c.want {
				t.Errorf("%s%v = %v (found %v), want %v", c.name, c.attrs, got, ok, c.want)
			}
		}
		// The queue gauges, read from the backend's Stats: one dead
		// message, nothing waiting.
		eventually(t, func() string {
			rm := s.metrics(t)
			dead, _ := value(rm, "conveyor.queue.messages", topic, group, otelconveyor.StateKey.String(otelconveyor.StateDead))
			ready, okR := value(rm, "conveyor.queue.messages", topic, group, otelconveyor.StateKey.String(otelconveyor.StateReady))
			processing, _ := value(rm, "conveyor.queue.messages", topic, group, otelconveyor.StateKey.String(otelconveyor.StateProcessing))
			_, okAge := value(rm, "conveyor.queue.oldest_ready.age", topic, group)
			if dead != 1 || ready != 0 || !okR || processing != 0 || !okAge {
				return fmt.Sprintf("gauges: dead %v, ready %v (found %v), processing %v, age found %v; want 1, 0, 0", dead, ready, okR, processing, okAge)
			}
			return ""
		})

		// Each request's trace: client → server → send → process (one per
		// delivery), and the listener ran inside the process span.
		mu.Lock()
		defer mu.Unlock()
		spans := s.spans.Ended()
		for n, kind := range kinds {
			tid := traceOf[n]
			inTrace := func(name string) []sdktrace.ReadOnlySpan {
				var out []sdktrace.ReadOnlySpan
				for _, sp := range spansNamed(spans, name) {
					if sp.SpanContext().TraceID() == tid {
						out = append(out, sp)
					}
				}
				return out
			}
			var servers []sdktrace.ReadOnlySpan
			for _, sp := range spans {
				if sp.SpanContext().TraceID() == tid && sp.SpanKind() == trace.SpanKindServer {
					servers = append(servers, sp)
				}
			}
			sends, processes := inTrace("send orders"), inTrace("process orders")
			if len(servers) != 1 || len(sends) != 1 {
				t.Fatalf("order %d: %d server and %d send spans in its trace, want 1 and 1", n, len(servers), len(sends))
			}
			send := sends[0]
			if send.Parent().SpanID() != servers[0].SpanContext().SpanID() || send.SpanKind() != trace.SpanKindProducer {
				t.Errorf("order %d: the send span is not the producer child of the HTTP server span", n)
			}
			wantDeliveries := map[string]int{"ok": 1, "retry": 2, "dead": 2}[kind]
			if len(processes) != wantDeliveries {
				t.Fatalf("order %d (%s): %d process spans, want %d", n, kind, len(processes), wantDeliveries)
			}
			outcomes := map[string]int{}
			for _, p := range processes {
				if p.Parent().SpanID() != send.SpanContext().SpanID() || p.SpanKind() != trace.SpanKindConsumer {
					t.Errorf("order %d: a process span is not the consumer child of the send span", n)
				}
				o := attr(p, "conveyor.settle.outcome")
				outcomes[o]++
				if attr(p, "cloudevents.event_type") != "com.example.order" {
					t.Errorf("order %d: the process span lacks the event's type: %v", n, p.Attributes())
				}
				if (o == otelconveyor.OutcomeAck) != (p.Status().Code != codes.Error) {
					t.Errorf("order %d: outcome %s with status %v", n, o, p.Status())
				}
			}
			want := map[string]map[string]int{
				"ok":    {otelconveyor.OutcomeAck: 1},
				"retry": {otelconveyor.OutcomeNack: 1, otelconveyor.OutcomeAck: 1},
				"dead":  {otelconveyor.OutcomeNack: 1, otelconveyor.OutcomeDead: 1},
			}[kind]
			if fmt.Sprint(outcomes) != fmt.Sprint(want) {
				t.Errorf("order %d (%s): outcomes %v, want %v", n, kind, outcomes, want)
			}
			for _, h := range seen {
				if h.order.N != n {
					continue
				}
				if h.span.TraceID() != tid {
					t.Errorf("order %d: the listener ran outside the request's trace", n)
				}
				if !strings.Contains(h.traceparent, send.SpanContext().SpanID().String()) {
					t.Errorf("order %d: the event's traceparent %q does not name the send span %s", n, h.traceparent, send.SpanContext().SpanID())
				}
			}
		}
	})
}

// TestTopicTrace checks a raw topic: the trace context goes in the
// message's header, the consumer's HandlingContext is the process span.
func TestTopicTrace(t *testing.T) {
	eachBackend(t, func(t *testing.T, register func(*testing.T, context.Context)) {
		s := newSDK(t, otelconveyor.Options{})
		ctx := newInjector(t, register, s)
		tp := injectedTopic(t, ctx, "jobs")
		m, root := produceJob(t, ctx, tp, s.tp.Tracer("test"))
		if h := pubsub.MessageHeader(m); !strings.HasPrefix(h["traceparent"], "00-"+root.SpanContext().TraceID().String()) {
			t.Errorf("header %v lacks the producer's trace", h)
		}
		hctx := pubsub.HandlingContext(ctx, m)
		if got := trace.SpanContextFromContext(hctx).TraceID(); got != root.SpanContext().TraceID() {
			t.Errorf("the handling context is in trace %s, want the producer's %s", got, root.SpanContext().TraceID())
		}
		// Abilities stay reachable through the wrapping.
		if pubsub.Attempt(m) != 1 {
			t.Errorf("attempt %d through the wrapper, want 1", pubsub.Attempt(m))
		}
		if _, ok := pubsub.As[admin.DeadLetters](tp); !ok {
			t.Error("DeadLetters is not reachable through the wrapper")
		}
		if err := pubsub.Reject(ctx, m, errors.New("bad job")); err != nil {
			t.Fatal(err)
		}
		process := spansNamed(s.spans.Ended(), "process jobs")
		if len(process) != 1 || process[0].Parent().SpanID() == root.SpanContext().SpanID() ||
			process[0].SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Fatalf("process spans %v: want one in the producer's trace, a child of its send span", process)
		}
		if attr(process[0], "conveyor.settle.outcome") != otelconveyor.OutcomeDead || process[0].Status().Description != "dead: bad job" {
			t.Errorf("process span: outcome %q, status %v; want dead with the reason", attr(process[0], "conveyor.settle.outcome"), process[0].Status())
		}
	})
}

// produceJob enqueues "job" on tp in a span "producer" of tracer, ends
// the span, and returns the message, dequeued, and the span.
func produceJob(t *testing.T, ctx context.Context, tp pubsub.Topic, tracer trace.Tracer) (pubsub.Message, trace.Span) {
	t.Helper()
	pctx, root := tracer.Start(ctx, "producer")
	if err := tp.Enqueue(pctx, []byte("job")); err != nil {
		t.Fatal(err)
	}
	root.End()
	dctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	m, err := tp.Dequeue(dctx)
	if err != nil {
		t.Fatal(err)
	}
	return m, root
}

// TestTopicTraceNotSampled checks that a message enqueued in a trace that
// is not sampled carries that trace, flagged not sampled, to its consumer:
// the Telemetry's sampler, ParentBased(AlwaysSample), would sample a
// process span of its own, yet the process span stays in the producer's
// trace and is not sampled either. Every message still counts.
func TestTopicTraceNotSampled(t *testing.T) {
	eachBackend(t, func(t *testing.T, register func(*testing.T, context.Context)) {
		s := newSDK(t, otelconveyor.Options{})
		ctx := newInjector(t, register, s)
		tp := injectedTopic(t, ctx, "unsampled")
		never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		t.Cleanup(func() { _ = never.Shutdown(context.Background()) })
		m, root := produceJob(t, ctx, tp, never.Tracer("test"))
		if root.SpanContext().IsSampled() || !root.SpanContext().IsValid() {
			t.Fatalf("producer span %v: want a valid one, not sampled", root.SpanContext())
		}
		tid := root.SpanContext().TraceID()
		if h := pubsub.MessageHeader(m)["traceparent"]; !strings.HasPrefix(h, "00-"+tid.String()+"-") || !strings.HasSuffix(h, "-00") {
			t.Errorf("traceparent %q: want the producer's trace %s, not sampled (flags 00)", h, tid)
		}
		hctx := pubsub.HandlingContext(ctx, m)
		sc := trace.SpanContextFromContext(hctx)
		if sc.TraceID() != tid || sc.IsSampled() || !sc.IsValid() || sc.IsRemote() || sc.SpanID() == root.SpanContext().SpanID() {
			t.Errorf("the handling context's span %+v: want a span of its own in the producer's trace %s, not sampled", sc, tid)
		}
		if trace.SpanFromContext(hctx).IsRecording() {
			t.Error("the process span is recording")
		}
		if err := m.Ack(hctx); err != nil {
			t.Fatal(err)
		}
		if ended := s.spans.Ended(); len(ended) != 0 {
			t.Errorf("%d spans recorded, want none: %v", len(ended), ended)
		}
		topic := attribute.String("messaging.destination.name", "unsampled")
		group := attribute.String("messaging.consumer.group.name", pubsub.DefaultSubscription)
		rm := s.metrics(t)
		for _, c := range []struct {
			name  string
			attrs []attribute.KeyValue
		}{
			{"messaging.client.sent.messages", []attribute.KeyValue{topic}},
			{"messaging.client.operation.duration", []attribute.KeyValue{topic}}, // its count
			{"messaging.client.consumed.messages", []attribute.KeyValue{topic, group}},
			{"conveyor.messages.acked", []attribute.KeyValue{topic, group}},
			{"messaging.process.duration", []attribute.KeyValue{topic, group}}, // its count
		} {
			if got, ok := value(rm, c.name, c.attrs...); !ok || got != 1 {
				t.Errorf("%s%v = %v (found %v), want 1", c.name, c.attrs, got, ok)
			}
		}
	})
}

// TestMiddlewareAlone checks that a Service on a PubSub that is not
// wrapped still continues the producer's trace, from the event's
// traceparent attribute.
func TestMiddlewareAlone(t *testing.T) {
	for _, b := range backends[:1] {
		s := newSDK(t, otelconveyor.Options{})
		ctx := di.NewContext(context.Background())
		b.register(t, ctx)
		t.Cleanup(func() {
			if err := di.Shutdown(ctx); err != nil {
				t.Error(err)
			}
		})
		if err := event.Register(ctx); err != nil {
			t.Fatal(err)
		}
		svc, err := event.NewService("orders", event.ServiceOptions{Middleware: []event.Middleware{s.tel.Middleware()}})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan trace.SpanContext, 1)
		meta := make(chan event.Metadata, 1)
		_ = event.ListenFunc(svc, func(ctx context.Context, o Order) error {
			md, _ := event.Meta(ctx)
			meta <- md
			got <- trace.SpanContextFromContext(ctx)
			return nil
		})
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		orders, _ := di.ResolveNamed[event.Dispatcher](ctx, "orders")
		pctx, root := s.tp.Tracer("test").Start(ctx, "producer")
		// Without a wrapper, the app puts the trace context in the header
		// itself (otelconveyor.Wrap does it for it).
		h := pubsub.Header{}
		propagation.TraceContext{}.Inject(pctx, propagation.MapCarrier(h))
		if err := orders.Dispatch(pubsub.WithHeader(pctx, h), Order{N: 1, Kind: "ok"}); err != nil {
			t.Fatal(err)
		}
		root.End()
		md, sc := <-meta, <-got
		if sc.TraceID() != root.SpanContext().TraceID() {
			t.Fatalf("the listener ran in trace %s, want the producer's %s", sc.TraceID(), root.SpanContext().TraceID())
		}
		// The process span Middleware made has the attributes of a wrapped
		// topic's, and the event's.
		want := attribute.NewSet(
			attribute.String("messaging.system", otelconveyor.System),
			attribute.String("messaging.destination.name", md.Topic),
			attribute.String("messaging.consumer.group.name", md.Subscription),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.operation.name", "process"),
			attribute.String("messaging.message.id", md.MessageID),
			attribute.Int("conveyor.message.attempt", 1),
			attribute.String("cloudevents.event_id", md.ID),
			attribute.String("cloudevents.event_type", string(md.Type)),
			attribute.String("cloudevents.event_source", md.Source))
		eventually(t, func() string {
			process := spansNamed(s.spans.Ended(), "process orders")
			if len(process) != 1 {
				return fmt.Sprintf("%d process spans ended, want 1", len(process))
			}
			if got := attribute.NewSet(process[0].Attributes()...); !got.Equals(&want) {
				return fmt.Sprintf("process span attributes %v, want %v", process[0].Attributes(), want.ToSlice())
			}
			return ""
		})
	}
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// newInjector returns a ctx carrying an injector with the backend
// register registers, wrapped by s's Telemetry; it is shut down when t
// ends, before the backend's store is removed.
func newInjector(t *testing.T, register func(*testing.T, context.Context), s *sdk) context.Context {
	t.Helper()
	ctx := di.NewContext(context.Background())
	register(t, ctx)
	t.Cleanup(func() {
		if err := di.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	if err := s.tel.Register(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestTopicSpanAttributes checks the attributes of each send and process
// span of a raw topic, and the header each message arrives with: the send
// span's trace context over the header the enqueue's ctx asked for, and
// nothing of one enqueue's header in another's.
func TestTopicSpanAttributes(t *testing.T) {
	eachBackend(t, func(t *testing.T, register func(*testing.T, context.Context)) {
		s := newSDK(t, otelconveyor.Options{})
		ctx := newInjector(t, register, s)
		tp := injectedTopic(t, ctx, "attrs")

		asked := pubsub.Header{"tenant": "a", "traceparent": "not the send span's"}
		if err := tp.Enqueue(pubsub.WithHeader(ctx, asked), []byte("one")); err != nil {
			t.Fatal(err)
		}
		if err := tp.Enqueue(ctx, []byte("three")); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("b1"), []byte("b2")}); err != nil {
			t.Fatal(err)
		}
		if want := (pubsub.Header{"tenant": "a", "traceparent": "not the send span's"}); !maps.Equal(asked, want) {
			t.Errorf("the enqueue changed the header it was asked for: %q", asked)
		}

		system := attribute.String("messaging.system", otelconveyor.System)
		dest := attribute.String("messaging.destination.name", "attrs")
		sends := spansNamed(s.spans.Ended(), "send attrs")
		// A batch is one send span, all or none (pubsub.BatchEnqueuer) or
		// pipelined (natspubsub: pubsub.PipelinedEnqueuer); a backend with
		// neither would fall back to an Enqueue, and a send span, per item.
		_, batched := pubsub.As[pubsub.BatchEnqueuer](tp)
		if _, pipelined := pubsub.As[pubsub.PipelinedEnqueuer](tp); pipelined {
			batched = true
		}
		if want := map[bool]int{true: 3, false: 4}[batched]; len(sends) != want {
			t.Fatalf("%d send spans, want %d (the backend has a batch: %v)", len(sends), want, batched)
		}
		wantSends := [][]attribute.KeyValue{
			{system, dest, attribute.String("messaging.operation.type", "send"), attribute.String("messaging.operation.name", "enqueue"),
				attribute.Int("messaging.message.body.size", 3)},
			{system, dest, attribute.String("messaging.operation.type", "send"), attribute.String("messaging.operation.name", "enqueue"),
				attribute.Int("messaging.message.body.size", 5)},
			{system, dest, attribute.String("messaging.operation.type", "send"), attribute.String("messaging.operation.name", "enqueue_batch"),
				attribute.Int("messaging.batch.message_count", 2)},
		}
		if !batched {
			item := []attribute.KeyValue{system, dest, attribute.String("messaging.operation.type", "send"),
				attribute.String("messaging.operation.name", "enqueue"), attribute.Int("messaging.message.body.size", 2)}
			wantSends = append(wantSends[:2], item, item)
		}
		for i, want := range wantSends {
			wantSet, gotSet := attribute.NewSet(want...), attribute.NewSet(sends[i].Attributes()...)
			if !gotSet.Equals(&wantSet) {
				t.Errorf("send span %d: attributes %v, want %v", i, sends[i].Attributes(), want)
			}
		}

		// The header and the process span of each delivery, by data.
		wantHeader := map[string]pubsub.Header{
			"one":   {"tenant": "a", "traceparent": traceparent(sends[0])},
			"three": {"traceparent": traceparent(sends[1])},
			"b1":    {"traceparent": traceparent(sends[2])},
			"b2":    {"traceparent": traceparent(sends[len(sends)-1])},
		}
		ids := map[string]string{}
		dctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		for range wantHeader {
			m, err := tp.Dequeue(dctx)
			if err != nil {
				t.Fatal(err)
			}
			data := string(m.Data())
			if h := pubsub.MessageHeader(m); !maps.Equal(h, wantHeader[data]) {
				t.Errorf("message %q: header %q, want %q", data, h, wantHeader[data])
			}
			ids[data] = m.ID()
			if err := m.Ack(pubsub.HandlingContext(ctx, m)); err != nil {
				t.Fatal(err)
			}
		}
		processes := spansNamed(s.spans.Ended(), "process attrs")
		if len(processes) != len(wantHeader) {
			t.Fatalf("%d process spans, want %d", len(processes), len(wantHeader))
		}
		for _, p := range processes {
			var data string
			for d, id := range ids {
				if attr(p, "messaging.message.id") == id {
					data = d
				}
			}
			want := attribute.NewSet(system, dest,
				attribute.String("messaging.consumer.group.name", pubsub.DefaultSubscription),
				attribute.String("messaging.operation.type", "process"), attribute.String("messaging.operation.name", "process"),
				attribute.String("messaging.message.id", ids[data]), attribute.Int("messaging.message.body.size", len(data)),
				attribute.Int("conveyor.message.attempt", 1), attribute.String("conveyor.settle.outcome", otelconveyor.OutcomeAck))
			if got := attribute.NewSet(p.Attributes()...); data == "" || !got.Equals(&want) {
				t.Errorf("process span of %q: attributes %v, want %v", data, p.Attributes(), want.ToSlice())
			}
		}
	})
}

// traceparent is the W3C traceparent of span s.
func traceparent(s sdktrace.ReadOnlySpan) string {
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), s.SpanContext()), h)
	return h["traceparent"]
}

// injectedTopic opens topic name on the injector's PubSub (the wrapped
// one), closed when t ends.
func injectedTopic(t *testing.T, ctx context.Context, name string) pubsub.Topic {
	t.Helper()
	ps, err := di.Resolve[pubsub.PubSub](ctx)
	if err != nil {
		t.Fatal(err)
	}
	tp := ps.Topic(name)
	t.Cleanup(func() { _ = tp.Close() })
	return tp
}
