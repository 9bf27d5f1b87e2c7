package engine

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Observer is where instrumentation (otelconveyor's spans and counts)
// attaches to an engine, instead of wrapping its handles. Each func, when
// set, is called on the caller's goroutine and must not block.
//
// With StartEnqueue set, the engine's handles are wrap.EnqueueStarter;
// with Delivered set, its messages are wrap.ContextCarrier. Without,
// pubsub.As finds neither on them (wrap.Forwarder), so that a caller
// pays nothing for an Observer nobody set.
type Observer struct {
	// StartEnqueue is called as an enqueue starts, before its checks. The
	// enqueue goes on with the ctx it returns, so that a header it adds
	// there (pubsub.WithHeader: a trace context) is its messages'; end is
	// called once with the outcome. An enqueue called with the ctx of the
	// handle's own StartEnqueue (wrap.StartEnqueue) is observed by that
	// one only.
	StartEnqueue func(ctx context.Context, e Enqueue) (context.Context, func(EnqueueEnd))
	// Delivered is called for each delivery a Dequeue hands out. What it
	// returns, unless nil, is the delivery's Observation: it gives the
	// delivery's handling context and hears of its settles.
	Delivered func(d Delivery) Observation
}

// EnqueueOp is the call an enqueue was made with.
type EnqueueOp int

// The enqueue calls.
const (
	OpEnqueue       EnqueueOp = iota // Enqueue, and EnqueueOwned
	OpEnqueueAt                      // EnqueueAt
	OpEnqueueBatch                   // EnqueueBatch, and a StartEnqueue of more than one message
	OpEnqueueUnique                  // EnqueueUnique
)

// Enqueue is an enqueue as it starts.
type Enqueue struct {
	Topic string
	Op    EnqueueOp
	N     int // messages
	Size  int // the payload's bytes, for one message; -1 when unknown (a batch, a StartEnqueue)
}

// EnqueueEnd is an enqueue's outcome.
type EnqueueEnd struct {
	Err error
	// Duplicate: a unique enqueue added nothing, since the topic keeps a
	// message with its key (Err is nil).
	Duplicate bool
}

// Delivery is a delivery as a Dequeue hands it out.
type Delivery struct {
	Topic, Subscription string
	// Message is the engine's message: its ID, Data, Header and Attempt
	// may be read, not settled.
	Message pubsub.Message
}

// Outcome is what a settle made of a delivery, as the engine decided it.
type Outcome int

// The outcomes of a settle.
const (
	NotSettled Outcome = iota // an extension of the lease
	Acked
	Retried // nacked or failed, and to be delivered again
	Dead    // rejected, or failed on its last attempt
)

// Settle is one settle, or one extension of the lease, of a delivery.
type Settle struct {
	Op string // "ack", "nack", "reject" or "extend lease"
	// Outcome is what the settle made of the delivery, or would have
	// made had it not failed (Err).
	Outcome Outcome
	Reason  error // the reason given to Fail or Reject, or nil
	Err     error // the settle's error: the store changed nothing, or cannot say
}

// Observation is an Observer's view of one delivery.
type Observation interface {
	// Context returns ctx carrying the delivery's handling context (its
	// process span): the engine's message answers pubsub.HandlingContext
	// with it.
	Context(ctx context.Context) context.Context
	// Settled hears of each settle the store was asked for, and its
	// outcome; a settle the engine refuses (pubsub.ErrSettled) is not.
	Settled(s Settle)
}
