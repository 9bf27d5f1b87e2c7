package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Dequeues of one subscription in one PubSub fetch together: one of them
// at a time, the fetcher, asks the server for as many messages as there
// are Dequeues waiting for one, and the server answers at once with what is ready
// (a pull request that does not wait), and for one more message per
// delivery this process holds unsettled: the consumer that holds it comes
// back for another soon. Only when nothing is ready does the fetcher wait
// for one message, for up to fetchWait. Fetched messages not taken at once
// are kept, in order, for the next Dequeues; one whose lease ran out (by
// this process's clock) while kept is let go, and the server delivers it
// again. Under load a round trip to the server brings a message for every
// consumer, not one; at most one message per consumer waits here, so a
// slow handler holds back one message besides its own.

// fetchWait bounds the pull request of a fetcher that waits for a message:
// while none comes it asks again this often, so that a server that
// restarted or a consumer that was re-created is found again.
const fetchWait = 5 * time.Second

// maxFetch bounds the messages of one pull request.
const maxFetch = 256

// fetcher is the shared fetching of one subscription's Dequeues.
type fetcher struct {
	mu       sync.Mutex
	pending  []*message            // fetched, not yet handed out, in order
	wanting  int                   // Dequeues without a message yet, the fetcher's included
	inHand   map[*message]struct{} // handed out and not settled
	fetching bool                  // a Dequeue is fetching
	wake     chan struct{}         // closed when pending grew or the fetcher is done; nil if nobody waits on it
}

// popLocked returns the oldest kept message whose lease still runs, or
// nil. Called with mu held.
func (f *fetcher) popLocked() *message {
	now := time.Now()
	for len(f.pending) > 0 {
		m := f.pending[0]
		f.pending[0] = nil
		f.pending = f.pending[1:]
		if now.Before(m.deadline) {
			return m
		}
	}
	return nil
}

// handOutLocked records m as handed out and returns it. Called with mu
// held.
func (f *fetcher) handOutLocked(m *message) *message {
	if f.inHand == nil {
		f.inHand = map[*message]struct{}{}
	}
	f.inHand[m] = struct{}{}
	return m
}

// settled forgets m, handed out and now settled.
func (f *fetcher) settled(m *message) {
	f.mu.Lock()
	delete(f.inHand, m)
	f.mu.Unlock()
}

// demandLocked is how many messages to fetch: one for each Dequeue
// waiting and one for each delivery in hand whose lease still runs (a
// delivery never settled is forgotten when its lease ran out). Called
// with mu held.
func (f *fetcher) demandLocked() int {
	now := time.Now()
	for m := range f.inHand {
		if !now.Before(m.leaseDeadline()) {
			delete(f.inHand, m)
		}
	}
	return f.wanting + len(f.inHand)
}

// drop lets the kept messages go: their consumer is gone.
func (f *fetcher) drop() {
	f.mu.Lock()
	f.pending, f.inHand = nil, nil
	f.mu.Unlock()
}

// waitLocked returns a channel closed by the next wakeLocked. Called with
// mu held.
func (f *fetcher) waitLocked() <-chan struct{} {
	if f.wake == nil {
		f.wake = make(chan struct{})
	}
	return f.wake
}

// wakeLocked wakes the waiting Dequeues. Called with mu held.
func (f *fetcher) wakeLocked() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// Dequeue blocks until a message of the subscription is delivered, ctx
// ends, or the handle or PubSub closes. While the server cannot be reached
// it keeps asking, logging the errors, until ctx ends.
func (t *Topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, f := t.sub, &t.sub.f
	f.mu.Lock()
	if m := f.popLocked(); m != nil {
		f.handOutLocked(m)
		f.mu.Unlock()
		return m, nil
	}
	f.wanting++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.wanting--
		f.mu.Unlock()
	}()
	var logged bool
	for {
		f.mu.Lock()
		if m := f.popLocked(); m != nil {
			f.handOutLocked(m)
			f.mu.Unlock()
			return m, nil
		}
		if f.fetching {
			wake := f.waitLocked()
			f.mu.Unlock()
			select {
			case <-wake:
			case <-ctx.Done():
			case <-t.closed.Done():
			case <-t.st.ps.ctx.Done():
			}
			if err := t.check(); err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		f.fetching = true
		n := f.demandLocked()
		f.mu.Unlock()

		msgs, err := t.fetch(ctx, n)
		var m *message
		f.mu.Lock()
		f.fetching = false
		if len(msgs) > 0 {
			m = f.handOutLocked(msgs[0])
			f.pending = append(f.pending, msgs[1:]...)
		}
		f.wakeLocked()
		f.mu.Unlock()
		if m != nil {
			return m, nil
		}
		if cerr := t.check(); cerr != nil {
			return nil, cerr
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if err == nil {
			continue
		}
		if errors.Is(err, pubsub.ErrNoSubscription) {
			return nil, err
		}
		if !logged {
			t.st.ps.opts.Logger.Warn("natspubsub: dequeue failed; retrying", "topic", t.st.name, "subscription", s.name, "error", err)
			logged = true
		}
		select {
		case <-time.After(retryWait):
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.closed.Done():
			return nil, t.check()
		case <-t.st.ps.ctx.Done():
			return nil, t.check()
		}
	}
}

// fetch asks for up to n messages ready now; when none is, it waits for
// one until ctx ends, the handle or PubSub closes, or fetchWait passed. It
// returns no message and no error when nothing came or what came is not to
// be handed out. A waiting request ended by the client is unsubscribed at
// once, and the server hands nothing to a request nobody listens to.
func (t *Topic) fetch(ctx context.Context, n int) ([]*message, error) {
	cons, err := t.sub.forDequeue(ctx)
	if err != nil {
		return nil, err
	}
	batch, err := cons.FetchNoWait(min(n, maxFetch))
	if err != nil {
		return nil, err
	}
	msgs, got, err := t.accept(batch, nil)
	if got > 0 || err != nil {
		return msgs, err
	}

	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	// The request ends with the handle and the PubSub too.
	defer context.AfterFunc(t.closed, cancel)()
	defer context.AfterFunc(t.st.ps.ctx, cancel)()
	batch, err = cons.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		return nil, err
	}
	msgs, _, err = t.accept(batch, fctx)
	return msgs, err
}

// accept returns the messages of batch to hand out, how many deliveries it
// brought, and its error, unless the error is the end of fctx (a waiting
// request's own deadline).
func (t *Topic) accept(batch jetstream.MessageBatch, fctx context.Context) ([]*message, int, error) {
	var msgs []*message
	got := 0
	for jm := range batch.Messages() {
		got++
		if m := t.sub.accept(jm); m != nil {
			msgs = append(msgs, m)
		}
	}
	err := batch.Error()
	if err == nil || got > 0 || (fctx != nil && fctx.Err() != nil) {
		return msgs, got, nil
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
		t.sub.forget() // deleted by another process
	}
	return nil, 0, err
}

// forDequeue returns the consumer a Dequeue reads: consuming the default
// subscription declares it; a named one must exist (Subscribe), else the
// error wraps pubsub.ErrNoSubscription.
func (s *subState) forDequeue(ctx context.Context) (jetstream.Consumer, error) {
	if s.name == pubsub.DefaultSubscription {
		return s.declare(ctx)
	}
	c, _, err := s.lookup(ctx)
	if err == nil && c == nil {
		err = fmt.Errorf("natspubsub: dequeue on %s: %w %q", s.label(), pubsub.ErrNoSubscription, s.name)
	}
	return c, err
}
