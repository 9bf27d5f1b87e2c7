package admin

import (
	"context"
	"errors"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Quiescer is a pubsub.PubSub whose consumers can be held still: a quiesce
// gate, for a migration or a restore that needs no message in a consumer's
// hands. Quiesce closes the gate and waits for the deliveries in hand to
// settle; Resume opens it again.
//
// While the gate is closed, every Dequeue on a handle of the PubSub
// (whatever its topic or subscription, and so a relay reading it) blocks,
// without failing, until the gate opens, its ctx ends or its handle or
// the PubSub closes; no Dequeue returns a delivery after Quiesce has
// returned. Enqueues go on, and the messages wait. A delivery already in
// hand can still be settled and its lease extended.
//
// Close of a quiesced PubSub returns the Dequeue calls waiting at the
// gate, and a Quiesce waiting for deliveries, with pubsub.ErrClosed.
//
// The gate is per PubSub value: it holds the consumers of this process
// only. To hold a subscription's consumers in every process, pause it
// (Pauser), where the backend can.
type Quiescer interface {
	// Quiesce closes the gate and returns once no delivery is in hand:
	// each was settled, or its lease ran out (its message then waits
	// for Resume). When ctx ends first, the gate stays closed and
	// Quiesce returns ctx's error, wrapped with how many deliveries are
	// still in hand; Quiesce again waits for them, Resume gives up (a
	// Quiesce still waiting then returns an error wrapping ErrResumed).
	// Quiescing a quiesced PubSub closes nothing more and waits as the
	// first call does; one Resume opens it for every caller.
	Quiesce(ctx context.Context) error
	// Resume opens the gate: the waiting Dequeue calls go on. Resuming
	// an open gate does nothing.
	Resume(ctx context.Context) error
	// Quiesced reports whether the gate is closed.
	Quiesced(ctx context.Context) (bool, error)
}

// Quiesce closes ps's quiesce gate and waits for its deliveries in hand to
// settle (see Quiescer). Without a Quiescer it returns pubsub.ErrUnsupported.
func Quiesce(ctx context.Context, ps pubsub.PubSub) error {
	q, ok := pubsub.As[Quiescer](ps)
	if !ok {
		return unsupported(ps, "quiesce")
	}
	return q.Quiesce(ctx)
}

// ResumeConsumers opens ps's quiesce gate (see Quiescer). Without a
// Quiescer it returns pubsub.ErrUnsupported.
func ResumeConsumers(ctx context.Context, ps pubsub.PubSub) error {
	q, ok := pubsub.As[Quiescer](ps)
	if !ok {
		return unsupported(ps, "quiesce")
	}
	return q.Resume(ctx)
}

// IsQuiesced reports whether ps's quiesce gate is closed. Without a
// Quiescer it returns pubsub.ErrUnsupported.
func IsQuiesced(ctx context.Context, ps pubsub.PubSub) (bool, error) {
	q, ok := pubsub.As[Quiescer](ps)
	if !ok {
		return false, unsupported(ps, "quiesce")
	}
	return q.Quiesced(ctx)
}

// ErrResumed is wrapped by the error of a Quiesce call still waiting for
// deliveries in hand when Resume opened the gate.
var ErrResumed = errors.New("admin: resumed before the deliveries in hand settled")
