package pubsub

import (
	"context"
	"fmt"
	"time"
)

// Optional abilities. A backend offers one by implementing the interface on
// its Topic or Message; callers use the package-level helper named in the
// interface's doc (mostly the method's own name: EnqueueAt, Fail, ...),
// which finds the ability through wrappers (see As) and says
// ErrUnsupported (or uses the documented fallback) where the backend lacks
// it.

// Delayer is a Topic that can hold a message back until a given time.
type Delayer interface {
	EnqueueAt(ctx context.Context, data []byte, at time.Time) error
}

// BatchEnqueuer is a Topic that can enqueue many messages in one call,
// all or none.
type BatchEnqueuer interface {
	EnqueueBatch(ctx context.Context, data [][]byte) error
}

// PipelinedEnqueuer is a Topic that enqueues the items of a batch
// together but not all or none, where the server has no atomic batch
// (natspubsub): it sends every item, in order, before it waits for their
// acknowledgements, and returns once all are answered. An item refused
// leaves the others enqueued: the error is a *BatchError naming the items
// that were not. EnqueueBatch uses it on a topic that is no BatchEnqueuer.
type PipelinedEnqueuer interface {
	EnqueuePipelined(ctx context.Context, data [][]byte) error
}

// BatchError is the error of a batch enqueued without all or none
// (PipelinedEnqueuer) when some of its items were not enqueued: Failed
// are their indexes in the batch, ascending, and Errs their errors, in
// the same order; every other item was enqueued. An item whose
// acknowledgement was lost (a timeout, a connection that broke) is among
// Failed though it may have been stored, as an Enqueue that returned such
// an error may have been (at least once). errors.Is and errors.As look at
// each item's error.
type BatchError struct {
	Len    int     // the items of the batch
	Failed []int   // the items not enqueued, ascending
	Errs   []error // Errs[i] is why Failed[i] was not
}

func (e *BatchError) Error() string {
	if len(e.Failed) == 0 {
		return fmt.Sprintf("pubsub: batch of %d: no item failed", e.Len)
	}
	more := ""
	if n := len(e.Failed); n > 1 {
		more = fmt.Sprintf(" (and %d more)", n-1)
	}
	return fmt.Sprintf("pubsub: %d of %d batch items not enqueued, the others were: item %d: %v%s",
		len(e.Failed), e.Len, e.Failed[0], e.Errs[0], more)
}

// Unwrap returns the items' errors, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error { return e.Errs }

// UniqueEnqueuer is a Topic that can enqueue a message only if no message
// with the same key is already kept by it (ready, scheduled, processing,
// dead, or finished and not yet pruned): the way several processes enqueue
// one thing once, such as one tick of a periodic event. A backend may
// remember a key for a bounded window only (natspubsub; declared by
// pubsubtest.Abilities.UniqueWindow).
type UniqueEnqueuer interface {
	// EnqueueUnique reports whether data was enqueued (false: a message
	// with key exists, and nothing was added).
	EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error)
}

// Attempter is a Message that knows its delivery number: 1 on the first
// delivery, 2 on the first redelivery, and so on.
type Attempter interface {
	Attempt() int
}

// LeaseExtender is a Message whose lease can be extended, for handlers
// that run longer than the lease.
type LeaseExtender interface {
	// ExtendLease moves the lease deadline to now+d. It wraps
	// ErrLeaseExpired if the lease already ran out, ErrSettled if the
	// delivery was settled.
	ExtendLease(ctx context.Context, d time.Duration) error
}

// Failer is a Message that can be nacked with the reason it failed; the
// reason is kept and shown with the message if it ends up dead.
type Failer interface {
	Fail(ctx context.Context, reason error) error
}

// Rejecter is a Message that can be made dead at once, without retries,
// keeping the reason: for messages that can never succeed.
type Rejecter interface {
	Reject(ctx context.Context, reason error) error
}

// EnqueueAt enqueues data to be delivered no earlier than at. A time in the
// past means now. Without a Delayer it returns ErrUnsupported.
func EnqueueAt(ctx context.Context, t Topic, data []byte, at time.Time) error {
	d, ok := As[Delayer](t)
	if !ok {
		return unsupported(t, "delayed enqueue")
	}
	return d.EnqueueAt(ctx, data, at)
}

// EnqueueDelayed enqueues data to be delivered after delay.
func EnqueueDelayed(ctx context.Context, t Topic, data []byte, delay time.Duration) error {
	return EnqueueAt(ctx, t, data, time.Now().Add(delay))
}

// EnqueueBatch enqueues every item of data. With a BatchEnqueuer it is one
// call, all or none; with a PipelinedEnqueuer the items are sent together
// and each is enqueued or not (a *BatchError names those that were not);
// otherwise it falls back to one Enqueue per item, stopping at the first
// error, so a prefix may have been enqueued.
func EnqueueBatch(ctx context.Context, t Topic, data [][]byte) error {
	if b, ok := As[BatchEnqueuer](t); ok {
		return b.EnqueueBatch(ctx, data)
	}
	if p, ok := As[PipelinedEnqueuer](t); ok {
		return p.EnqueuePipelined(ctx, data)
	}
	for i, d := range data {
		if err := t.Enqueue(ctx, d); err != nil {
			return fmt.Errorf("pubsub: batch item %d of %d: %w", i, len(data), err)
		}
	}
	return nil
}

// EnqueueUnique enqueues data unless t already keeps a message with key.
// Without a UniqueEnqueuer it returns ErrUnsupported.
func EnqueueUnique(ctx context.Context, t Topic, key string, data []byte) (bool, error) {
	u, ok := As[UniqueEnqueuer](t)
	if !ok {
		return false, unsupported(t, "unique enqueue")
	}
	return u.EnqueueUnique(ctx, key, data)
}

// Attempt returns m's delivery number (1 on the first delivery), or 0 if
// the backend does not count.
func Attempt(m Message) int {
	if a, ok := As[Attempter](m); ok {
		return a.Attempt()
	}
	return 0
}

// ExtendLease extends m's lease to now+d. Without a LeaseExtender it
// returns ErrUnsupported.
func ExtendLease(ctx context.Context, m Message, d time.Duration) error {
	if e, ok := As[LeaseExtender](m); ok {
		return e.ExtendLease(ctx, d)
	}
	return unsupported(m, "lease extension")
}

// Fail nacks m, recording reason. Without a Failer it falls back to Nack
// and the reason is not kept.
func Fail(ctx context.Context, m Message, reason error) error {
	if f, ok := As[Failer](m); ok {
		return f.Fail(ctx, reason)
	}
	return m.Nack(ctx)
}

// Reject makes m dead at once, recording reason. Without a Rejecter it
// returns ErrUnsupported and leaves m unsettled.
func Reject(ctx context.Context, m Message, reason error) error {
	if r, ok := As[Rejecter](m); ok {
		return r.Reject(ctx, reason)
	}
	return unsupported(m, "reject")
}

func unsupported(v any, what string) error {
	return fmt.Errorf("%w: %s (%T)", ErrUnsupported, what, v)
}
