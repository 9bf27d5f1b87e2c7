// Command app is a small shop built on conveyor: POST /orders dispatches an
// event that listeners handle in the background, a sales report is
// dispatched periodically, GET /stats shows what was handled and GET
// /metrics the app's metrics (telemetry.go; traces too, over OTLP, when
// OTEL_EXPORTER_OTLP_ENDPOINT is set). Two event services consume the
// topic, each on its own subscription, so each gets every event:
// fulfilment, and analytics counting the orders.
//
// Build and run it with `go build -o app . && ./app` (go run exits 1 when a
// signal stops the app); configure it with environment variables (see
// Config): CONVEYOR_BACKEND=db with DATABASE_URL keeps the events in
// PostgreSQL instead of memory, CONVEYOR_BACKEND=nats with NATS_URL in NATS
// JetStream, CONVEYOR_BACKEND=kafka with KAFKA_BROKERS in Kafka.
// SIGINT or SIGTERM stops it cleanly: it stops
// taking orders, finishes the work in flight and exits 0.
package main
