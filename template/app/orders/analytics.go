package orders

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Tally is what the analytics service counted: the orders placed and their
// units. Like Sales, it stands in for the app's own storage.
type Tally struct {
	mu     sync.Mutex
	orders int
	units  int
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{} }

// Add counts one order of qty units.
func (t *Tally) Add(qty int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.orders++
	t.units += qty
}

// Totals returns the orders and units counted.
func (t *Tally) Totals() (orders, units int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.orders, t.units
}

// CountOrder handles Placed events on the analytics subscription: it
// counts each order once, even when the event comes back (after a failure
// of its own or of a sibling listener, or a crash), by claiming the event
// in the inbox before counting it. On a backend without an inbox (Kafka,
// so far) it counts every delivery: an event that comes back is counted
// again.
type CountOrder struct {
	Tally *Tally `inject:""`
}

// Handle counts the order, unless an earlier delivery did.
func (c *CountOrder) Handle(ctx context.Context, e Placed) error {
	// nil: the claim is recorded at once, and released if Handle fails.
	// An app counting in its database passes the transaction that writes
	// the count, so that both commit together: event.Claim(ctx, tx).
	first, err := event.Claim(ctx, nil)
	if errors.Is(err, pubsub.ErrUnsupported) {
		first, err = true, nil // no inbox: at least once
	}
	if err != nil || !first {
		return err
	}
	c.Tally.Add(e.Qty)
	return nil
}

// Snapshot handles ReportDue events on the analytics subscription: it logs
// the tally. (A subscription gets every event type of its topic; a Service
// without a listener for one makes its events dead unless
// ServiceOptions.SkipUnknown.)
type Snapshot struct {
	Tally *Tally       `inject:""`
	Log   *slog.Logger `inject:""`
}

// Handle logs the tally.
func (s *Snapshot) Handle(ctx context.Context, e ReportDue) error {
	orders, units := s.Tally.Totals()
	s.Log.InfoContext(ctx, "analytics", "at", e.At.Format("15:04:05"), "orders", orders, "units", units)
	return nil
}
