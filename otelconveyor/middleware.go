package otelconveyor

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conveyorgo/conveyor/event"
)

// Middleware returns the event.Middleware of a Service's tracing. It puts
// the event's CloudEvents attributes (cloudevents.event_id, event_type,
// event_source, event_subject) on the delivery's process span, and a
// listener's error there.
//
// On a wrapped PubSub (Wrap, Register) that span is the message's, which
// its settlement ends. On one that is not, Middleware makes the process
// span itself, a child of the trace context the event carries
// (traceparent and tracestate, the CloudEvents distributed tracing
// extension), ended when the listeners return: traces still cross
// services, but only a wrapped PubSub counts the metrics.
func (t *Telemetry) Middleware() event.Middleware {
	return func(next event.Handler) event.Handler {
		return func(ctx context.Context, d event.Delivery) error {
			if ctx.Value(processKey{}) != nil {
				span := trace.SpanFromContext(ctx)
				if span.IsRecording() {
					span.SetAttributes(eventAttrs(make([]attribute.KeyValue, 0, numEventAttrs), d)...)
				}
				err := next(ctx, d)
				if err != nil && span.IsRecording() {
					span.RecordError(err, trace.WithAttributes(attribute.Bool("conveyor.event.permanent", event.IsPermanent(err))))
				}
				return err
			}
			return t.process(ctx, d, next)
		}
	}
}

// process runs next in a process span of its own, for a Service whose
// PubSub is not wrapped.
func (t *Telemetry) process(ctx context.Context, d event.Delivery, next event.Handler) error {
	parent := ctx
	if len(d.Extensions) > 0 {
		parent = t.propagator.Extract(ctx, extensionCarrier(d.Extensions))
	}
	ctx, span := t.tracer.Start(parent, "process "+d.Topic, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		// Those of a wrapped topic's process span (newAttrs, WrapTopic and
		// deliver), then the event's, in one slice.
		a := make([]attribute.KeyValue, 0, 7+numEventAttrs)
		a = append(a, semconv.MessagingSystemKey.String(System), semconv.MessagingDestinationName(d.Topic))
		if d.Subscription != "" {
			a = append(a, semconv.MessagingConsumerGroupName(d.Subscription))
		}
		a = append(a, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingMessageID(d.MessageID), attribute.Int("conveyor.message.attempt", d.Attempt))
		span.SetAttributes(eventAttrs(a, d)...)
	}
	err := next(ctx, d)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// numEventAttrs is the most attributes eventAttrs appends.
const numEventAttrs = 4

// eventAttrs appends the CloudEvents attributes of d to a.
func eventAttrs(a []attribute.KeyValue, d event.Delivery) []attribute.KeyValue {
	a = append(a,
		semconv.CloudEventsEventID(d.ID),
		semconv.CloudEventsEventType(string(d.Type)),
		semconv.CloudEventsEventSource(d.Source),
	)
	if d.Subject != "" {
		a = append(a, semconv.CloudEventsEventSubject(d.Subject))
	}
	return a
}
