package otelconveyor

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Wrap returns ps traced and measured: every topic and subscription it
// opens is wrapped as WrapTopic says, and its topics' counts feed the
// queue gauges. Every optional ability of ps and its topics stays
// reachable through the wrapping (pubsub.As), and no ability ps lacks is
// claimed by it (wrap.Forwarder). Closing the result closes ps.
func (t *Telemetry) Wrap(ps pubsub.PubSub) pubsub.PubSub {
	return &wrappedPubSub{inner: ps, tel: t}
}

type wrappedPubSub struct {
	inner pubsub.PubSub
	tel   *Telemetry
}

var (
	_ pubsub.Subscriber     = (*wrappedPubSub)(nil)
	_ pubsub.SubscriberWith = (*wrappedPubSub)(nil)
	_ wrap.Forwarder        = (*wrappedPubSub)(nil)
)

// Unwrap returns the wrapped PubSub.
func (w *wrappedPubSub) Unwrap() pubsub.PubSub { return w.inner }

func (w *wrappedPubSub) Topic(name string) pubsub.Topic {
	return w.wrap(w.inner.Topic(name), name, pubsub.DefaultSubscription)
}

func (w *wrappedPubSub) Subscribe(ctx context.Context, topic, sub string) (pubsub.Topic, error) {
	t, err := pubsub.Subscribe(ctx, w.inner, topic, sub)
	if err != nil {
		return nil, err
	}
	return w.wrap(t, topic, sub), nil
}

// SubscribeWith is Subscribe with the subscription's own configuration
// (pubsub.SubscriberWith), forwarded to the wrapped PubSub.
func (w *wrappedPubSub) SubscribeWith(ctx context.Context, topic, sub string, opts pubsub.SubscriptionOptions) (pubsub.Topic, error) {
	t, err := pubsub.SubscribeWith(ctx, w.inner, topic, sub, opts)
	if err != nil {
		return nil, err
	}
	return w.wrap(t, topic, sub), nil
}

// Forwards says that SubscribeWith only forwards the wrapped PubSub's:
// pubsub.As finds it here only when the PubSub below has it.
func (*wrappedPubSub) Forwards(ability any) bool {
	_, ok := ability.(*pubsub.SubscriberWith)
	return ok
}

func (w *wrappedPubSub) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	return admin.ListSubscriptions(ctx, w.inner, topic)
}

func (w *wrappedPubSub) DeleteSubscription(ctx context.Context, topic, sub string) error {
	return admin.DeleteSubscription(ctx, w.inner, topic, sub)
}

// Close stops the gauges' reading of ps's topics and closes ps, if it can
// be closed.
func (w *wrappedPubSub) Close() error {
	if w.tel.stats != nil {
		w.tel.stats.forget(w.inner)
	}
	if c, ok := w.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// wrap wraps subscription sub of topic. The gauges count a subscription
// once it is consumed here: at once for a named one, at the first Dequeue
// for the default one, since a handle made only to publish does not
// consume it.
func (w *wrappedPubSub) wrap(t pubsub.Topic, topic, sub string) pubsub.Topic {
	wt := w.tel.WrapTopic(t, topic, sub).(*topic_)
	if st := w.tel.stats; st != nil {
		wt.watch = func() { st.watch(w.inner, topic, sub) }
		if sub != pubsub.DefaultSubscription {
			wt.watched.Store(true)
			wt.watch()
		}
	}
	return wt
}

// WrapTopic returns t, subscription sub of topic, traced and measured:
//
//   - Each enqueue (Enqueue, EnqueueAt, EnqueueBatch, EnqueueUnique) is a
//     "send" span of kind producer, whose trace context goes into each
//     message's header (pubsub.WithHeader), and counts in
//     messaging.client.sent.messages and
//     messaging.client.operation.duration.
//   - Each delivery (Dequeue) starts a "process" span of kind consumer,
//     a child of the context in the message's header, which its
//     settlement ends with the outcome (ack, nack with the attempt, dead
//     with the reason). It counts in messaging.client.consumed.messages,
//     its settlement in conveyor.messages.acked, .nacked or .dead, and
//     the time from dequeue to settlement in messaging.process.duration.
//     Handle the message with pubsub.HandlingContext(ctx, m) to make
//     spans of your own inside it; an event Service does.
//
// Use Wrap instead to have the topic's counts in the queue gauges too.
func (t *Telemetry) WrapTopic(inner pubsub.Topic, topic, sub string) pubsub.Topic {
	if sub == "" {
		sub = pubsub.DefaultSubscription
	}
	pub, cons := t.counted(newAttrs(topic, "")), t.counted(newAttrs(topic, sub))
	retry, _ := wrap.TopicRetryPolicy(inner)
	w := &topic_{inner: inner, tel: t, pub: pub, cons: cons, retry: retry,
		sendName: "send " + topic, processName: "process " + topic}
	for op := range numSendOps {
		w.sendAttrs[op] = append(append([]attribute.KeyValue(nil), pub.span...), semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName(sendOpNames[op]))
	}
	w.processAttrs = append(append([]attribute.KeyValue(nil), cons.span...), semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"))
	return w
}

// The start options of the spans: their kind only. A span's attributes
// are set once it records (see doc.go): the SDK copies the attributes
// given at the start of every span, recorded or not.
var (
	sendStart    = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	processStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
)

// sendOp is the operation of a send span (messaging.operation.name).
type sendOp int

const (
	opEnqueue sendOp = iota
	opEnqueueAt
	opEnqueueBatch
	opEnqueueUnique
	numSendOps
)

var sendOpNames = [numSendOps]string{"enqueue", "enqueue_at", "enqueue_batch", "enqueue_unique"}

// topic_ is a wrapped topic (topic is taken by the parameters' names).
type topic_ struct {
	inner        pubsub.Topic
	tel          *Telemetry
	pub, cons    *attrs // of publishing (the topic) and consuming (its subscription)
	retry        pubsub.RetryPolicy
	sendName     string
	processName  string
	sendAttrs    [numSendOps][]attribute.KeyValue // a send span's attributes, by operation
	processAttrs []attribute.KeyValue             // a process span's attributes
	watch        func()                           // adds the subscription to the gauges (Wrap), or nil
	watched      atomic.Bool                      // watch was called
}

var (
	_ pubsub.Delayer           = (*topic_)(nil)
	_ pubsub.BatchEnqueuer     = (*topic_)(nil)
	_ pubsub.PipelinedEnqueuer = (*topic_)(nil)
	_ pubsub.UniqueEnqueuer    = (*topic_)(nil)
	_ wrap.EnqueueStarter      = (*topic_)(nil)
	_ wrap.OwnedEnqueuer       = (*topic_)(nil)
	_ wrap.Forwarder           = (*topic_)(nil)
)

// Forwards says that the enqueue abilities and the copy-free enqueue only
// trace the wrapped topic's: the topic has each one only if the wrapped
// topic does (pubsub.As, wrap.FindSpeedup), so a caller that checks for
// an all-or-none batch is not misled.
func (*topic_) Forwards(ability any) bool {
	switch ability.(type) {
	case *pubsub.Delayer, *pubsub.BatchEnqueuer, *pubsub.PipelinedEnqueuer, *pubsub.UniqueEnqueuer, *wrap.OwnedEnqueuer:
		return true
	}
	return false
}

// Unwrap returns the wrapped topic.
func (w *topic_) Unwrap() pubsub.Topic { return w.inner }

func (w *topic_) Close() error { return w.inner.Close() }

func (w *topic_) Enqueue(ctx context.Context, data []byte) error {
	return w.publish(ctx, 1, len(data), opEnqueue, func(ctx context.Context) error { return w.inner.Enqueue(ctx, data) })
}

// EnqueueOwned keeps the wrapped topic's copy-free enqueue (see
// wrap.OwnedEnqueuer), which the event package uses.
func (w *topic_) EnqueueOwned(ctx context.Context, data []byte) error {
	return w.publish(ctx, 1, len(data), opEnqueue, func(ctx context.Context) error {
		if o, ok := wrap.FindSpeedup[wrap.OwnedEnqueuer](w.inner); ok {
			return o.EnqueueOwned(ctx, data)
		}
		return w.inner.Enqueue(ctx, data)
	})
}

func (w *topic_) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	return w.publish(ctx, 1, len(data), opEnqueueAt, func(ctx context.Context) error { return pubsub.EnqueueAt(ctx, w.inner, data, at) })
}

func (w *topic_) EnqueueBatch(ctx context.Context, data [][]byte) error {
	return w.publish(ctx, len(data), -1, opEnqueueBatch, func(ctx context.Context) error { return pubsub.EnqueueBatch(ctx, w.inner, data) })
}

// EnqueuePipelined traces the wrapped topic's pipelined batch as one send.
func (w *topic_) EnqueuePipelined(ctx context.Context, data [][]byte) error {
	return w.publish(ctx, len(data), -1, opEnqueueBatch, func(ctx context.Context) error {
		p, ok := pubsub.As[pubsub.PipelinedEnqueuer](w.inner)
		if !ok {
			return pubsub.EnqueueBatch(ctx, w.inner, data)
		}
		return p.EnqueuePipelined(ctx, data)
	})
}

func (w *topic_) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	var added bool
	err := w.publish(ctx, 1, len(data), opEnqueueUnique, func(ctx context.Context) (err error) {
		added, err = pubsub.EnqueueUnique(ctx, w.inner, key, data)
		if err == nil && !added {
			err = errNotAdded
		}
		return err
	})
	if err == errNotAdded {
		err = nil
	}
	return added, err
}

// errNotAdded tells publish that a unique enqueue added nothing: no error,
// and nothing sent.
var errNotAdded = &notAdded{}

type notAdded struct{}

func (*notAdded) Error() string { return "otelconveyor: a message with the key exists" }

// startedKey marks the ctx of an enqueue whose span a StartEnqueue of the
// topic (its value) started: the enqueue is counted by that one.
type startedKey struct{}

// StartEnqueue starts the send span of an enqueue of n messages; the event
// package calls it before it encodes events, so that each carries the
// span's trace context (see wrap.EnqueueStarter).
func (w *topic_) StartEnqueue(ctx context.Context, n int) (context.Context, func(error)) {
	op := opEnqueue
	if n != 1 {
		op = opEnqueueBatch
	}
	s := w.start(ctx, n, -1, op)
	return context.WithValue(s.ctx, startedKey{}, w), s.end
}

// publish runs do in a send span of n messages of size bytes (one
// message) counted when do succeeds, unless a StartEnqueue of w started
// one for it. do's ctx needs no startedKey: it goes to the wrapped topic,
// never back to w.
func (w *topic_) publish(ctx context.Context, n, size int, op sendOp, do func(context.Context) error) error {
	if ctx.Value(startedKey{}) == w {
		return do(ctx)
	}
	s := w.start(ctx, n, size, op)
	err := do(s.ctx)
	s.end(err)
	return err
}

// sending is an enqueue of n messages in its send span.
type sending struct {
	w     *topic_
	ctx   context.Context // carries the span and asks for its trace context in the header
	span  trace.Span
	begin time.Time
	n     int
}

func (w *topic_) start(ctx context.Context, n, size int, op sendOp) sending {
	begin := time.Now()
	ctx, span := w.tel.tracer.Start(ctx, w.sendName, sendStart...)
	if span.IsRecording() {
		span.SetAttributes(w.sendAttrs[op]...)
		switch {
		case n != 1:
			span.SetAttributes(semconv.MessagingBatchMessageCount(n))
		case size >= 0:
			span.SetAttributes(semconv.MessagingMessageBodySize(size))
		}
	}
	return sending{w: w, ctx: w.tel.inject(ctx), span: span, begin: begin, n: n}
}

// end counts the enqueue, if it succeeded, and ends its span.
func (s sending) end(err error) {
	tel, pub := s.w.tel, s.w.pub
	tel.sendDuration.Record(exemplarContext(s.ctx, s.span), time.Since(s.begin).Seconds(), pub.record...)
	switch {
	case err == nil:
		pub.counts.sent.Add(int64(s.n))
	case err == errNotAdded:
		s.span.SetAttributes(attribute.Bool("conveyor.unique.duplicate", true))
	default:
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}

func (w *topic_) Dequeue(ctx context.Context) (pubsub.Message, error) {
	if w.watch != nil && !w.watched.Load() && w.watched.CompareAndSwap(false, true) {
		w.watch()
	}
	m, err := w.inner.Dequeue(ctx)
	if err != nil {
		return nil, err
	}
	return w.deliver(m), nil
}
