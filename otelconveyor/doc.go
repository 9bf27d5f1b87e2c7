// Package otelconveyor traces and measures conveyor with OpenTelemetry:
// spans that follow a message from its producer to its consumer across
// topics, processes and backends, and the metrics an operator watches
// (what is published, delivered, acked, retried and dead, how long
// handlers take, how deep each queue is and how old its oldest message).
// It uses the OpenTelemetry API only: the app brings the SDK and its
// exporters (the template app serves Prometheus at /metrics and exports
// traces with OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set).
//
//	tel, err := otelconveyor.New(otelconveyor.Options{}) // the global providers
//	dbpubsub.Register(ctx)  // any backend
//	tel.Register(ctx)       // its PubSub, topics and Services are traced and measured
//	event.Register(ctx)
//	svc, err := event.NewService("orders", event.ServiceOptions{
//		Middleware: []event.Middleware{tel.Middleware()}, // the events' attributes
//	})
//
// or, without an injector, ps = tel.Wrap(ps).
//
// Through Register, a backend built on conveyor's engine (channelpubsub,
// natspubsub) is not wrapped: the Telemetry is its engine's Observer
// (engine.RegisterObserver), and the engine's hook points make the same
// spans and counts, with the outcome of each settle as the engine
// decided it. Another backend is wrapped.
//
// # Traces
//
// Following the OpenTelemetry semantic conventions for messaging:
//
//   - An enqueue, or an event Dispatch, is a "send {topic}" span of kind
//     producer. Its trace context goes into each message's header
//     (traceparent, tracestate; see pubsub.WithHeader), which every
//     backend carries, and into each event as the CloudEvents distributed
//     tracing extension, which event.Decode keeps.
//   - A delivery is a "process {topic}" span of kind consumer, a child of
//     the send span, from its Dequeue to its settlement: ack, nack (with
//     the attempt), or dead (with the reason), in the attribute
//     conveyor.settle.outcome and the span's status. Listeners run inside
//     it (pubsub.HandlingContext), so their own spans and logs join the
//     trace.
//   - A span's attributes are set once it records: a sampler decides on
//     its name ("send orders", "process orders") and kind, which name the
//     topic and the operation, and a message not sampled costs no copy of
//     them.
//
// # Metrics
//
// By topic (messaging.destination.name) and subscription
// (messaging.consumer.group.name): messaging.client.sent.messages,
// messaging.client.operation.duration (enqueue),
// messaging.client.consumed.messages, messaging.process.duration (dequeue
// to settlement), conveyor.messages.acked, conveyor.messages.nacked,
// conveyor.messages.dead, and the gauges conveyor.queue.messages (by
// conveyor.state: ready, scheduled, processing, dead) and
// conveyor.queue.oldest_ready.age, read from the backend's Stats at most
// once per Options.StatsInterval when a reader collects, never per
// message, for each subscription consumed through the wrapper.
//
// # Guarantees
//
//   - Wrapping changes nothing a caller observes: every optional ability
//     of the backend stays reachable (pubsub.As), and pubsubtest passes on
//     a wrapped backend. The wrapper offers the enqueue abilities itself
//     (delayed, batch, unique), answering pubsub.ErrUnsupported, or the
//     documented fallback, where the backend lacks one.
//   - A settlement is counted once, when it succeeds; one that fails ends
//     the span with the error, and the redelivery is a delivery of its own.
//   - Without an SDK (the global no-op providers) nothing is recorded and
//     the cost is a few calls per message.
//
// LogHandler adds the trace and span ids to slog records logged with a
// ctx in a span. The attribute names, log keys and measurements:
// docs/observability.md.
package otelconveyor
