package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Delivery is one delivery of an event to a Service, as middleware sees it:
// the event's metadata and its data, still JSON.
type Delivery struct {
	Metadata
	Data json.RawMessage
}

// Handler handles one delivery. The Service's innermost Handler calls every
// listener of the event's type; middleware wraps it. Its error decides the
// message's fate: nil acks it, an error marked Permanent rejects it (dead at
// once), any other error fails it (retried after a backoff).
type Handler func(ctx context.Context, d Delivery) error

// Middleware wraps a Handler, for logging, metrics, tracing, timeouts.
type Middleware func(next Handler) Handler

// chain returns h wrapped by mws, the first outermost.
func chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// attrs are the log attributes of a delivery.
func attrs(d Delivery) []any {
	return []any{
		slog.String("event_id", d.ID),
		slog.String("event_type", string(d.Type)),
		slog.Int("attempt", d.Attempt),
		slog.String("topic", d.Topic),
		slog.String("subscription", d.Subscription),
		slog.String("message_id", d.MessageID),
	}
}

// Logging logs every delivery on l with the event's id, type and attempt,
// the topic, the time taken and the outcome: Debug when it succeeded, Warn
// when it failed (it will be retried), Error when it failed for good
// (Permanent: it is dead). A Service adds it, outermost, with
// ServiceOptions.Logger.
func Logging(l *slog.Logger) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, d Delivery) error {
			start := monoNow()
			err := next(ctx, d)
			level, msg := slog.LevelDebug, "event: handled"
			switch {
			case err == nil:
			case IsPermanent(err):
				level, msg = slog.LevelError, "event: failed for good, the message is dead"
			case d.LastAttempt:
				level, msg = slog.LevelError, "event: failed at its last attempt, the message is dead"
			default:
				level, msg = slog.LevelWarn, "event: failed, the message will be retried"
			}
			if !l.Enabled(ctx, level) {
				return err
			}
			args := append(attrs(d), slog.Duration("took", monoNow()-start))
			if err != nil {
				args = append(args, slog.Any("error", err))
			}
			l.Log(ctx, level, msg, args...)
			return err
		}
	}
}

// monoEpoch is the origin of monoNow.
var monoEpoch = time.Now()

// monoNow reads the monotonic clock only, as a time since monoEpoch: what
// measuring a duration needs, at about half the cost of time.Now, which
// reads the wall clock too.
func monoNow() time.Duration { return time.Since(monoEpoch) }

// Recover turns a panic in next into an error wrapping ErrPanic (so the
// message is retried like any failure) and logs the panic's value and stack
// on l. A Service always adds it, innermost.
func Recover(l *slog.Logger) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, d Delivery) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%w: %s %s: %v", ErrPanic, d.Type, d.ID, r)
					l.ErrorContext(ctx, "event: listener panicked", append(attrs(d),
						slog.Any("panic", r), slog.String("stack", string(debug.Stack())))...)
				}
			}()
			return next(ctx, d)
		}
	}
}

// Timeout gives next a context that ends after d. A listener that returns
// an error once it has ended gets an error saying it timed out (and wrapping
// context.DeadlineExceeded). Listeners must watch their ctx: Go cannot stop
// one that does not. d <= 0 means no timeout.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		if d <= 0 {
			return next
		}
		return func(ctx context.Context, dl Delivery) error {
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			err := next(tctx, dl)
			if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
				if !errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
				}
				err = fmt.Errorf("event: %s %s timed out after %v: %w", dl.Type, dl.ID, d, err)
			}
			return err
		}
	}
}

// Observe calls fn after every delivery with its metadata, the time it
// took and its error (nil: acked; IsPermanent: dead; else retried): the hook
// for metrics. A failure at the message's last attempt (Metadata.LastAttempt)
// makes it dead too: fn gets it marked Permanent.
func Observe(fn func(ctx context.Context, m Metadata, took time.Duration, err error)) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, d Delivery) error {
			start := time.Now()
			err := next(ctx, d)
			reported := err
			if err != nil && d.LastAttempt && !IsPermanent(err) {
				reported = Permanent(err)
			}
			fn(ctx, d.Metadata, time.Since(start), reported)
			return err
		}
	}
}
