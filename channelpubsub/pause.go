package channelpubsub

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Pauser = (*subscription)(nil)

// Pause pauses the handle's subscription: its Dequeue calls, on every
// handle, wait until Resume; enqueues go on (see admin.Pauser). A named
// subscription that does not exist wraps pubsub.ErrNoSubscription.
func (s *subscription) Pause(context.Context) error {
	q, err := s.open(false)
	if err != nil {
		return err
	}
	q.pause.set(true)
	return nil
}

// Resume resumes the handle's subscription and wakes its waiting Dequeue
// calls.
func (s *subscription) Resume(context.Context) error {
	q, err := s.open(false)
	if err != nil {
		return err
	}
	q.pause.set(false)
	return nil
}

// Paused reports whether the handle's subscription is paused.
func (s *subscription) Paused(context.Context) (bool, error) {
	q, err := s.open(false)
	if err != nil {
		return false, err
	}
	return q.pause.on.Load(), nil
}

// pauseState is the pause of a queue. Dequeue reads on with one atomic
// load; a Dequeue that took an entry off the channel and then finds the
// queue paused holds it, and the held entries go out first once resumed,
// so that one consumer still sees the enqueue order.
type pauseState struct {
	on      atomic.Bool
	pausing atomic.Pointer[chan struct{}] // closed by the next pause
	held    atomic.Int64                  // len(entries), read without mu

	mu      sync.Mutex
	resumed chan struct{} // while on: closed by the resume
	entries []*entry      // held, oldest first
}

func (p *pauseState) init() {
	ch := make(chan struct{})
	p.pausing.Store(&ch)
}

// set pauses (on) or resumes the queue; a change to the state it has
// already does nothing.
func (p *pauseState) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on.Load() == on {
		return
	}
	p.on.Store(on)
	if on {
		p.resumed = make(chan struct{})
		ch := make(chan struct{})
		close(*p.pausing.Swap(&ch))
		return
	}
	close(p.resumed)
}

// waitFor returns the channel the resume closes, or nil when the queue is
// not paused.
func (p *pauseState) waitFor() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on.Load() {
		return nil
	}
	return p.resumed
}

// hold keeps e, taken off the channel while the queue is paused.
func (p *pauseState) hold(e *entry) {
	p.mu.Lock()
	p.entries = append(p.entries, e)
	p.held.Add(1)
	p.mu.Unlock()
}

// takeHeld returns the oldest held entry, or nil.
func (p *pauseState) takeHeld() *entry {
	if p.held.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.entries) == 0 {
		return nil
	}
	e := p.entries[0]
	p.entries[0] = nil
	p.entries = p.entries[1:]
	p.held.Add(-1)
	return e
}
