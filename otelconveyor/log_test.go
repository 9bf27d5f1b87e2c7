package otelconveyor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/conveyorgo/conveyor/otelconveyor"
)

func TestLogHandler(t *testing.T) {
	s := newSDK(t, otelconveyor.Options{})
	var buf bytes.Buffer
	log := slog.New(otelconveyor.LogHandler(slog.NewJSONHandler(&buf, nil))).With("topic", "orders")

	log.InfoContext(context.Background(), "outside a span")
	ctx, span := s.tp.Tracer("test").Start(context.Background(), "work")
	log.InfoContext(ctx, "inside a span")
	span.End()

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), buf.Bytes())
	}
	var outside, inside map[string]any
	if err := json.Unmarshal(lines[0], &outside); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &inside); err != nil {
		t.Fatal(err)
	}
	if _, ok := outside[otelconveyor.TraceIDKey]; ok {
		t.Errorf("a record outside any span has a trace id: %v", outside)
	}
	sc := span.SpanContext()
	if inside[otelconveyor.TraceIDKey] != sc.TraceID().String() || inside[otelconveyor.SpanIDKey] != sc.SpanID().String() || inside["topic"] != "orders" {
		t.Errorf("record inside the span: %v; want trace_id %s, span_id %s and topic", inside, sc.TraceID(), sc.SpanID())
	}
}
