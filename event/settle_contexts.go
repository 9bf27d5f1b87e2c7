package event

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// settleSlack is how long one settle context is handed out: a settle's
// context ends between settleTimeout and settleTimeout+settleSlack after
// the settle began.
const settleSlack = time.Second

// settleContexts hands out the contexts Acks, Fails and Rejects run on:
// not canceled with the handlers, and bounded by settleTimeout. One context
// serves every settle of a settleSlack interval, instead of a timer armed
// and stopped per settle.
type settleContexts struct {
	parent context.Context // never canceled
	cur    atomic.Pointer[settleContext]

	mu      sync.Mutex      // renews cur
	cancels []settleContext // every context made and not yet canceled, oldest first
}

type settleContext struct {
	ctx      context.Context
	cancel   context.CancelFunc
	deadline time.Time
	until    time.Duration // handed out before until only, by monoNow
}

// newSettleContexts returns contexts that carry the values of parent but
// not its cancellation.
func newSettleContexts(parent context.Context) *settleContexts {
	return &settleContexts{parent: context.WithoutCancel(parent)}
}

// get returns a context that ends no sooner than settleTimeout from now.
func (s *settleContexts) get() context.Context {
	mono := monoNow() // the monotonic clock alone: the fast path needs no more
	if c := s.cur.Load(); c != nil && mono < c.until {
		return c.ctx
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Load(); c != nil && mono < c.until {
		return c.ctx // renewed meanwhile
	}
	now := time.Now() // read after mono: the context ends settleTimeout after both
	kept := s.cancels[:0]
	for _, c := range s.cancels {
		if now.After(c.deadline) {
			c.cancel() // ended: release it
		} else {
			kept = append(kept, c)
		}
	}
	s.cancels = kept
	c := settleContext{deadline: now.Add(settleTimeout + settleSlack), until: mono + settleSlack}
	c.ctx, c.cancel = context.WithDeadline(s.parent, c.deadline)
	s.cancels = append(s.cancels, c)
	s.cur.Store(&c)
	return c.ctx
}

// stop cancels every context handed out; call it once nothing settles
// (a get after it makes a context released only when it ends).
func (s *settleContexts) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Store(nil)
	for _, c := range s.cancels {
		c.cancel()
	}
	s.cancels = nil
}
