package driver

import (
	"context"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// ErrLeaseLost is wrapped by the error of a settle or an extension whose
// delivery no longer holds its lease: it ran out and the message may be
// in another consumer's hands, or the subscription was deleted. It is
// pubsub.ErrLeaseExpired, so that the engine hands it on as it is.
var ErrLeaseLost = pubsub.ErrLeaseExpired

// ReasonLeaseExpired is the reason a store keeps with a message it made
// dead because the lease of its last attempt ran out.
const ReasonLeaseExpired = "lease expired"

// Subscription is a store's side of one subscription: its deliveries and
// their leases. The engine calls its settle methods at most once per
// delivery that succeeds (Ack, Retry and Dead settle; Extend does not),
// never concurrently for one delivery.
type Subscription interface {
	// Receive blocks until a message of the subscription is due, leases
	// it, and fills d: a new delivery, attempt counted. It returns ctx's
	// error when ctx ends, an error wrapping pubsub.ErrClosed when stop
	// is closed (the engine's handle closed) or the store closes, one
	// wrapping pubsub.ErrNoSubscription while a named subscription does
	// not exist. A store that keeps a paused subscription's messages
	// back (Pauser) waits here.
	Receive(ctx context.Context, stop <-chan struct{}, d *Delivery) error
	// Ack settles d's message for good.
	Ack(ctx context.Context, d *Delivery) error
	// Retry gives d's message back, due after delay. A non-empty reason
	// is kept with it (shown if it ends up dead); "" keeps the last one.
	Retry(ctx context.Context, d *Delivery, delay time.Duration, reason string) error
	// Dead makes d's message dead, keeping reason ("" keeps the last
	// one): listed and re-queued by DeadLetters where the store has them.
	Dead(ctx context.Context, d *Delivery, reason string) error
	// Extend moves d's lease deadline to now+by (by > 0).
	Extend(ctx context.Context, d *Delivery, by time.Duration) error
}

// Delivery is one delivery of a message, filled by Receive. The engine
// keeps it, by value, in the pubsub.Message it hands out, and passes it
// back to the settle calls, so that a store needs no allocation of its own
// per delivery.
type Delivery struct {
	// Msg is the store's handle on the message: what its settle calls
	// find it by (an in-memory store's entry, a row's ID).
	Msg Ref
	// Token fences the delivery: a store settles or extends the message
	// only while its lease is still this delivery's, and returns an error
	// wrapping ErrLeaseLost otherwise.
	Token uint64
	// Data is the payload, as enqueued; the engine never writes it.
	Data []byte
	// Header is the header it was enqueued with, nil if none.
	Header pubsub.Header
	// Attempt is the delivery number: 1 for the first.
	Attempt int
}

// Ref is a store's handle on a message.
type Ref interface {
	// ID is the message's ID, the same on every delivery.
	ID() string
}

// IDAppender is a Ref that writes its ID into a buffer without making a
// string: the event package keeps it in a string of its own.
type IDAppender interface {
	AppendID(b []byte) []byte
}
