package otelconveyor

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// The log attributes LogHandler adds.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// LogHandler returns h adding, to every record logged with a ctx that
// carries a valid span (slog's *Context methods, as the event Service's
// Logging middleware calls them with the handling ctx), the span's
// trace_id and span_id: a log line then leads to its trace.
func LogHandler(h slog.Handler) slog.Handler { return &logHandler{h} }

type logHandler struct{ slog.Handler }

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(TraceIDKey, sc.TraceID().String()), slog.String(SpanIDKey, sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{l.Handler.WithAttrs(attrs)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{l.Handler.WithGroup(name)}
}
