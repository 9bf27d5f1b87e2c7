package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// gate is a PubSub's quiesce gate (admin.Quiescer). While it is shut,
// Dequeue waits instead of calling the store's Receive, and a Receive in
// flight when it shuts is stopped: each handle's Receive gets a stopper,
// a channel the gate closes when it shuts (and the handle when it
// closes). A delivery the store hands over all the same, in the instant
// the gate shuts, is given back (the store's Retry, due now) rather than
// handed out.
//
// held counts the deliveries handed out and not yet settled or lost. A
// Dequeue counts its delivery before it looks at the gate, and Quiesce
// shuts the gate before it looks at held: so either the Dequeue sees the
// gate shut (and gives the delivery back), or Quiesce counts it.
//
// The count is kept in shards, each on a cache line of its own, a handle
// counting in one (heldShards): one counter every consumer of the PubSub
// wrote on each delivery and settle made the cores take its line from
// each other, and with it the PubSub's fields read on the same paths.
// Only a shut gate reads their sum, which reaches 0 only when every
// shard is 0: the last release sees it, as each shard's counts are
// made before its releases.
type gate struct {
	state atomic.Pointer[gateState]
	held  *[heldShards]heldShard
	next  atomic.Uint32 // the shard of the next handle
	// until is the latest lease deadline (Unix nanoseconds) an
	// extension set: Quiesce waits no longer than it for a delivery.
	until atomic.Int64

	mu   sync.Mutex // orders shut, open, close and the stoppers' registration
	done bool       // the PubSub closed
}

// gateState is one period of the gate, open or shut; the gate replaces it
// at each change, never changing one it published but for the stoppers it
// registers (under gate.mu) and the channels it closes.
type gateState struct {
	shut bool
	// open: the stoppers handed out in this period, closed when it ends.
	stops map[*stopper]struct{}
	// shut: since when; opened is closed when it ends (Resume, Close);
	// drained when nothing is in hand.
	since     time.Time
	opened    chan struct{}
	drained   chan struct{}
	drainOnce sync.Once
}

func (st *gateState) drain() { st.drainOnce.Do(func() { close(st.drained) }) }

// stopper is the stop channel of one handle's Receive calls in one open
// period of the gate.
type stopper struct {
	ch   chan struct{}
	st   *gateState
	once sync.Once
}

func (s *stopper) stop() { s.once.Do(func() { close(s.ch) }) }

// heldShards is how many counters held is kept in.
const heldShards = 8

// heldShard is one counter of held, alone on its cache line.
type heldShard struct {
	n atomic.Int64
	_ [120]byte
}

func (g *gate) init() {
	g.held = new([heldShards]heldShard)
	g.state.Store(&gateState{stops: map[*stopper]struct{}{}})
}

// shard returns the counter a new handle counts its deliveries in.
func (g *gate) shard() *atomic.Int64 {
	return &g.held[(g.next.Add(1)-1)%heldShards].n
}

// inHand returns how many deliveries are in hand: held's sum.
func (g *gate) inHand() int64 {
	var n int64
	for i := range g.held {
		n += g.held[i].n.Load()
	}
	return n
}

// shut closes the gate (if open) and returns its shut period, or false
// once the PubSub closed.
func (g *gate) shut() (*gateState, bool) {
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		return nil, false
	}
	st := g.state.Load()
	if !st.shut {
		open := st
		st = &gateState{shut: true, since: time.Now(), opened: make(chan struct{}), drained: make(chan struct{})}
		g.state.Store(st)
		for s := range open.stops {
			s.stop()
		}
	}
	g.mu.Unlock()
	if g.inHand() == 0 {
		st.drain()
	}
	return st, true
}

// open opens the gate (if shut); false once the PubSub closed.
func (g *gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return false
	}
	if st := g.state.Load(); st.shut {
		g.state.Store(&gateState{stops: map[*stopper]struct{}{}})
		close(st.opened)
	}
	return true
}

// close releases whoever waits on a shut gate: the PubSub closed.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if st := g.state.Load(); st.shut {
		close(st.opened)
	}
}

// release uncounts a delivery: settled, lost, or given back.
func (g *gate) release(held *atomic.Int64) {
	held.Add(-1)
	if st := g.state.Load(); st.shut && g.inHand() == 0 {
		st.drain()
	}
}

// extended notes a lease extended to deadline.
func (g *gate) extended(deadline time.Time) {
	d := deadline.UnixNano()
	for {
		u := g.until.Load()
		if u >= d || g.until.CompareAndSwap(u, d) {
			return
		}
	}
}

// stopperFor returns t's stopper for the open period st, or nil if the
// gate shut meanwhile.
func (g *gate) stopperFor(t *topic, st *gateState) *stopper {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state.Load() != st {
		return nil
	}
	if s := t.stop.Load(); s != nil && s.st == st {
		return s
	}
	s := &stopper{ch: make(chan struct{}), st: st}
	st.stops[s] = struct{}{}
	t.stop.Store(s)
	if t.h.IsClosed() { // t.Close stops the stopper it finds; it may have looked before
		s.stop()
	}
	return s
}

// forget stops s, the stopper of a handle that closed, and drops it.
func (g *gate) forget(s *stopper) {
	s.stop()
	g.mu.Lock()
	delete(s.st.stops, s)
	g.mu.Unlock()
}

// Quiesce closes the quiesce gate and waits until no delivery is in hand:
// each was settled, or its lease ran out (see admin.Quiescer).
func (ps *PubSub) Quiesce(ctx context.Context) error {
	if err := ps.usable(ctx, "quiesce"); err != nil {
		return err
	}
	st, ok := ps.gate.shut()
	if !ok {
		return fmt.Errorf("%s: quiesce: %w", ps.name, pubsub.ErrClosed)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		// No delivery is made while the gate is shut: the last lease of
		// one in hand ends a lease after the gate shut, or where an
		// extension moved it.
		last := st.since.Add(ps.defaults.Lease)
		if u := time.Unix(0, ps.gate.until.Load()); u.After(last) {
			last = u
		}
		wait := time.Until(last)
		if wait <= 0 {
			return nil
		}
		timer.Reset(wait)
		select {
		case <-st.drained:
			return nil
		case <-timer.C:
		case <-st.opened:
			if ps.closed.Load() {
				return fmt.Errorf("%s: quiesce: %w", ps.name, pubsub.ErrClosed)
			}
			return fmt.Errorf("%s: quiesce: %d deliveries in hand: %w", ps.name, ps.gate.inHand(), admin.ErrResumed)
		case <-ctx.Done():
			return fmt.Errorf("%s: quiesce: the gate stays closed, %d deliveries in hand: %w", ps.name, ps.gate.inHand(), ctx.Err())
		}
	}
}

// Resume opens the quiesce gate: the waiting Dequeue calls go on.
func (ps *PubSub) Resume(ctx context.Context) error {
	if err := ps.usable(ctx, "resume"); err != nil {
		return err
	}
	if !ps.gate.open() {
		return fmt.Errorf("%s: resume: %w", ps.name, pubsub.ErrClosed)
	}
	return nil
}

// Quiesced reports whether the quiesce gate is closed.
func (ps *PubSub) Quiesced(ctx context.Context) (bool, error) {
	if err := ps.usable(ctx, "quiesced"); err != nil {
		return false, err
	}
	return ps.gate.state.Load().shut, nil
}

// waitOpen waits for the shut period st to end; an error when ctx ends
// or t closes first.
func (t *topic) waitOpen(ctx context.Context, st *gateState) error {
	select {
	case <-st.opened:
		return nil
	case <-t.h.Closed():
		return t.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// giveBack returns d, received as the gate shut, to the store, due now:
// uncounted where the store can (driver.Releaser). Should that fail, its
// lease runs out and the store delivers it again.
func (t *topic) giveBack(ctx context.Context, d *driver.Delivery) {
	ctx = context.WithoutCancel(ctx)
	if t.caps.release != nil {
		_ = t.caps.release.Release(ctx, d)
		return
	}
	_ = t.ds.Retry(ctx, d, 0, "")
}
