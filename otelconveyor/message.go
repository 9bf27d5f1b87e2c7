package otelconveyor

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Outcomes of a settlement, the value of the conveyor.settle.outcome span
// attribute.
const (
	OutcomeAck  = "ack"
	OutcomeNack = "nack"
	OutcomeDead = "dead"
)

// The conveyor.settle.outcome attribute of each outcome, made once and
// only read.
var (
	ackAttrs  = []attribute.KeyValue{attribute.String("conveyor.settle.outcome", OutcomeAck)}
	nackAttrs = []attribute.KeyValue{attribute.String("conveyor.settle.outcome", OutcomeNack)}
	deadAttrs = []attribute.KeyValue{attribute.String("conveyor.settle.outcome", OutcomeDead)}
)

// processKey marks a ctx carrying the process span of a wrapped message
// (its value): the event Middleware adds to that span instead of making
// its own.
type processKey struct{}

// message is a delivery of a wrapped topic: its process span runs from the
// dequeue to the settlement.
type message struct {
	pubsub.Message
	w     *topic_
	span  trace.Span
	ctx   context.Context // carries span, for the metrics of the settlement
	begin time.Time
	done  atomic.Bool // settled (or its settlement failed): counted and ended once
}

var (
	_ pubsub.Failer       = (*message)(nil)
	_ pubsub.Rejecter     = (*message)(nil)
	_ wrap.ContextCarrier = (*message)(nil)
	_ wrap.IDAppender     = (*message)(nil)
	_ wrap.Forwarder      = (*message)(nil)
)

// Forwards says that Fail and Reject only trace the wrapped delivery's,
// and AppendID only forwards it: the wrapped message has them or the
// wrapper does not claim them.
func (*message) Forwards(ability any) bool {
	switch ability.(type) {
	case *pubsub.Failer, *pubsub.Rejecter, *wrap.IDAppender:
		return true
	}
	return false
}

// AppendID keeps the wrapped delivery's (see wrap.IDAppender), which
// the event package's Service uses.
func (m *message) AppendID(b []byte) []byte {
	if a, ok := wrap.FindSpeedup[wrap.IDAppender](m.Message); ok {
		return a.AppendID(b)
	}
	return append(b, m.Message.ID()...)
}

func (w *topic_) deliver(m pubsub.Message) *message {
	parent := context.Background()
	if h := pubsub.MessageHeader(m); len(h) > 0 {
		parent = w.tel.propagator.Extract(parent, headerCarrier(h))
	}
	ctx, span := w.tel.tracer.Start(parent, w.processName, processStart...)
	d := &message{Message: m, w: w, span: span, ctx: ctx, begin: time.Now()}
	if span.IsRecording() {
		span.SetAttributes(w.processAttrs...)
		span.SetAttributes(semconv.MessagingMessageID(m.ID()), semconv.MessagingMessageBodySize(len(m.Data())))
		if a := pubsub.Attempt(m); a > 0 {
			span.SetAttributes(attribute.Int("conveyor.message.attempt", a))
		}
	}
	w.cons.counts.consumed.Add(1)
	return d
}

// Unwrap returns the wrapped delivery.
func (m *message) Unwrap() pubsub.Message { return m.Message }

// Context returns ctx carrying the message's process span.
func (m *message) Context(ctx context.Context) context.Context {
	return context.WithValue(trace.ContextWithSpan(ctx, m.span), processKey{}, m)
}

func (m *message) Ack(ctx context.Context) error {
	err := m.Message.Ack(ctx)
	m.settled(OutcomeAck, nil, err)
	return err
}

func (m *message) Nack(ctx context.Context) error {
	err := m.Message.Nack(ctx)
	m.settled(m.failed(), nil, err)
	return err
}

func (m *message) Fail(ctx context.Context, reason error) error {
	err := pubsub.Fail(ctx, m.Message, reason)
	m.settled(m.failed(), reason, err)
	return err
}

func (m *message) Reject(ctx context.Context, reason error) error {
	err := pubsub.Reject(ctx, m.Message, reason)
	if errors.Is(err, pubsub.ErrUnsupported) {
		return err // not settled: the caller may fail it instead
	}
	m.settled(OutcomeDead, reason, err)
	return err
}

// failed is the outcome of a failure of this delivery: dead on its last
// attempt, else nack.
func (m *message) failed() string {
	if a := pubsub.Attempt(m.Message); a > 0 && m.w.retry.Exhausted(a) {
		return OutcomeDead
	}
	return OutcomeNack
}

// settled counts the settlement and ends the span, once. A settlement that
// failed (err) is not counted: the message comes back when its lease runs
// out, as a new delivery.
func (m *message) settled(outcome string, reason, err error) {
	if !m.done.CompareAndSwap(false, true) {
		return
	}
	tel, cons := m.w.tel, m.w.cons
	if err != nil {
		if m.span.IsRecording() {
			m.span.RecordError(err, trace.WithAttributes(attribute.String("conveyor.settle.outcome", outcome)))
			m.span.SetStatus(codes.Error, "settle failed: "+err.Error())
		}
		m.span.End()
		return
	}
	tel.processTime.Record(exemplarContext(m.ctx, m.span), time.Since(m.begin).Seconds(), cons.record...)
	counter, attrs := &cons.counts.dead, deadAttrs
	switch outcome {
	case OutcomeAck:
		counter, attrs = &cons.counts.acked, ackAttrs
	case OutcomeNack:
		counter, attrs = &cons.counts.nacked, nackAttrs
	}
	counter.Add(1)
	if m.span.IsRecording() {
		m.span.SetAttributes(attrs...)
		if outcome != OutcomeAck {
			desc := outcome
			if reason != nil {
				desc = outcome + ": " + reason.Error()
				m.span.RecordError(reason)
			}
			m.span.SetStatus(codes.Error, desc)
		}
	}
	m.span.End()
}
