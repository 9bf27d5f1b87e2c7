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
)

// Outcomes of a settlement, the value of the conveyor.settle.outcome span
// attribute.
const (
	OutcomeAck  = "ack"
	OutcomeNack = "nack"
	OutcomeDead = "dead"
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
	begin time.Time
	done  atomic.Bool // settled (or its settlement failed): counted and ended once
}

var (
	_ pubsub.Failer         = (*message)(nil)
	_ pubsub.Rejecter       = (*message)(nil)
	_ pubsub.ContextCarrier = (*message)(nil)
)

func (w *topic_) deliver(m pubsub.Message) *message {
	parent := context.Background()
	if h := pubsub.MessageHeader(m); len(h) > 0 {
		parent = w.tel.propagator.Extract(parent, headerCarrier(h))
	}
	_, span := w.tel.tracer.Start(parent, w.processName, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(w.processAttrs...))
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingMessageID(m.ID()), semconv.MessagingMessageBodySize(len(m.Data())))
		if a := pubsub.Attempt(m); a > 0 {
			span.SetAttributes(attribute.Int("conveyor.message.attempt", a))
		}
	}
	w.tel.consumed.Add(context.Background(), 1, w.cons.set)
	return &message{Message: m, w: w, span: span, begin: time.Now()}
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
	tel, set := m.w.tel, m.w.cons.set
	if err != nil {
		if m.span.IsRecording() {
			m.span.RecordError(err, trace.WithAttributes(attribute.String("conveyor.settle.outcome", outcome)))
			m.span.SetStatus(codes.Error, "settle failed: "+err.Error())
		}
		m.span.End()
		return
	}
	ctx := trace.ContextWithSpan(context.Background(), m.span)
	tel.processTime.Record(ctx, time.Since(m.begin).Seconds(), set)
	switch outcome {
	case OutcomeAck:
		tel.acked.Add(ctx, 1, set)
	case OutcomeNack:
		tel.nacked.Add(ctx, 1, set)
	default:
		tel.dead.Add(ctx, 1, set)
	}
	if m.span.IsRecording() {
		m.span.SetAttributes(attribute.String("conveyor.settle.outcome", outcome))
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
