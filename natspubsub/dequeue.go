package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Dequeues of one subscription in one process fetch together. A fetch runs
// in the background, one at a time, whenever fewer messages are kept here
// than the process should have ahead: one for each Dequeue waiting, or as
// many as it consumes in a quarter of the lease at its recent rate if that
// is more, at most maxFetch. A delivery in hand is not counted: a handler
// busy with it may take its whole lease (or extend it), and a message
// fetched for it would wait that long. The server answers at once with
// what is ready (a pull request that does not wait); only when nothing is
// ready does the fetch wait for one message, for up to fetchWait. Each
// message is kept for the Dequeues as it comes, so that they take the
// first while the rest of the batch is on its way; one fetch at a time
// keeps them in the order the server delivered them (it deals the messages
// of concurrent pull requests out in turn). So a fast consumer
// finds its next messages here, while a slow one holds back none. A kept
// message is given back to the server (giveBack: a negative ack, recorded
// as an unseen delivery so that it is no attempt, record.go) once half its
// lease passed here, before the lease can run out; when this process stops
// consuming the subscription for holdFor; and at Close. A
// fetch ends with the PubSub, not with the Dequeue that started it, so
// that what it brings after that Dequeue left is kept for the next one
// rather than sent to a request nobody reads any more.

// fetchWait bounds the pull request of a fetch that waits for a message:
// while none comes it asks again this often, so that a server that
// restarted or a consumer that was re-created is found again.
const fetchWait = 5 * time.Second

// maxFetch bounds the messages of one pull request.
const maxFetch = 256

// fetcher is the shared fetching of one subscription's Dequeues.
type fetcher struct {
	mu       sync.Mutex
	pending  []*message            // fetched, not yet handed out, in order
	back     []*message            // kept too long, to give back (giveBackLocked)
	giving   bool                  // a give-back runs
	lapse    *time.Timer           // gives back the oldest kept message at its keepUntil
	wanting  int                   // Dequeues waiting for a message
	inHand   map[*message]struct{} // handed out and not settled
	fetching bool                  // a fetch runs
	wake     chan struct{}         // closed when the fetch is done; nil if nobody waits on it
	err      error                 // of the last fetch
	logged   bool                  // the last fetch's error was logged
	idle     *time.Timer           // gives pending back when nobody consumes (giveBackIdle)

	// The rate at which this process consumes: handedOut messages since
	// rateSince, folded into rate (per second) at each fetch.
	handedOut int
	rateSince time.Time
	rate      float64
}

// popLocked returns the oldest kept message not kept too long, or nil;
// those kept too long go to be given back. Called with s.f.mu held.
func (s *subState) popLocked() *message {
	f := &s.f
	now := time.Now()
	for len(f.pending) > 0 {
		m := f.pending[0]
		f.pending[0] = nil
		f.pending = f.pending[1:]
		if now.Before(m.keepUntil) {
			return m
		}
		s.giveBackLocked(m)
	}
	return nil
}

// keepFor is how long a fetched message may wait here for a consumer:
// half the lease, so that it is given back well before the server
// redelivers it.
func keepFor(lease time.Duration) time.Duration { return lease / 2 }

// watchLapseLocked arms the give-back of the oldest kept message at its
// keepUntil. Called with s.f.mu held.
func (s *subState) watchLapseLocked() {
	f := &s.f
	if len(f.pending) == 0 {
		if f.lapse != nil {
			f.lapse.Stop()
		}
		return
	}
	d := time.Until(f.pending[0].keepUntil)
	if f.lapse == nil {
		f.lapse = time.AfterFunc(d, s.lapsed)
	} else {
		f.lapse.Reset(d)
	}
}

// lapsed gives back the kept messages kept too long.
func (s *subState) lapsed() {
	f := &s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for len(f.pending) > 0 && !now.Before(f.pending[0].keepUntil) {
		s.giveBackLocked(f.pending[0])
		f.pending[0] = nil
		f.pending = f.pending[1:]
	}
	s.watchLapseLocked()
}

// giveBackLocked queues msgs, fetched and never handed out, to be given
// back to the server in the background. Called with s.f.mu held.
func (s *subState) giveBackLocked(msgs ...*message) {
	f := &s.f
	f.back = append(f.back, msgs...)
	if f.giving || len(f.back) == 0 {
		return
	}
	ps := s.st.ps
	if !ps.goBackground(s.givingBack) {
		return // Close gives them back (takePending)
	}
	f.giving = true
}

// givingBack gives back the queued messages until none is left. Its
// requests do not end with the PubSub, so that Close, which waits for it,
// does not make the messages' deliveries count; each round is bounded by
// the request timeout.
func (s *subState) givingBack() {
	f := &s.f
	for {
		f.mu.Lock()
		msgs := f.back
		f.back = nil
		if len(msgs) == 0 {
			f.giving = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		ps := s.st.ps
		ctx, cancel := ps.closingRequest(context.Background())
		s.giveBack(ctx, ps.closingRequest, msgs)
		cancel()
	}
}

// handOutLocked records m as handed out and returns it. Called with mu
// held.
func (f *fetcher) handOutLocked(m *message) *message {
	if f.inHand == nil {
		f.inHand = map[*message]struct{}{}
	}
	f.inHand[m] = struct{}{}
	f.handedOut++
	return m
}

// settled forgets m, handed out and now settled.
func (s *subState) settled(m *message) {
	f := &s.f
	f.mu.Lock()
	delete(f.inHand, m)
	s.watchIdleLocked()
	f.mu.Unlock()
}

// holdFor is how long fetched messages wait here while this process does
// not consume the subscription (no Dequeue waits, no delivery is in hand)
// before they are given back to the server for another consumer: a
// tenth of the lease, at most a second.
func holdFor(lease time.Duration) time.Duration { return min(lease/10, time.Second) }

// watchIdleLocked arms the give-back of the pending messages if nobody
// consumes them. Called with s.f.mu held.
func (s *subState) watchIdleLocked() {
	f := &s.f
	if len(f.pending) == 0 || f.wanting > 0 || len(f.inHand) > 0 {
		return
	}
	d := holdFor(s.st.ps.opts.Lease)
	if f.idle == nil {
		f.idle = time.AfterFunc(d, s.giveBackIdle)
	} else {
		f.idle.Reset(d)
	}
}

// giveBackIdle gives the pending messages back to the server if this
// process still does not consume the subscription.
func (s *subState) giveBackIdle() {
	f := &s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wanting > 0 || len(f.inHand) > 0 {
		return
	}
	s.giveBackLocked(f.pending...)
	f.pending = nil
	s.watchLapseLocked()
}

// pruneLocked forgets the deliveries in hand whose lease ran out: never
// settled, they will not come back for another. Called with mu held.
func (f *fetcher) pruneLocked() {
	now := time.Now()
	for m := range f.inHand {
		if !now.Before(m.leaseDeadline()) {
			delete(f.inHand, m)
		}
	}
	if elapsed := now.Sub(f.rateSince); elapsed >= 10*time.Millisecond || f.rateSince.IsZero() {
		if !f.rateSince.IsZero() {
			f.rate = (f.rate + float64(f.handedOut)/elapsed.Seconds()) / 2
		}
		f.handedOut, f.rateSince = 0, now
	}
}

// aheadLocked is how many messages to keep here: one for each Dequeue
// waiting, or as many as this process consumes in a quarter of the lease
// at its recent rate if that is more, at most maxFetch. Called with s.f.mu
// held.
func (s *subState) aheadLocked() int {
	f := &s.f
	byRate := int(f.rate * (s.st.ps.opts.Lease / 4).Seconds())
	return min(max(f.wanting, byRate), maxFetch)
}

// drop lets the kept messages go: their consumer is gone.
func (f *fetcher) drop() {
	f.mu.Lock()
	f.pending, f.inHand, f.back = nil, nil, nil
	f.mu.Unlock()
}

// takePending removes and returns the kept messages, and those waiting
// to be given back.
func (f *fetcher) takePending() []*message {
	f.mu.Lock()
	defer f.mu.Unlock()
	msgs := append(f.back, f.pending...)
	f.pending, f.back = nil, nil
	if f.lapse != nil {
		f.lapse.Stop()
	}
	return msgs
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

// ReceiveSlot blocks until a message of the subscription is delivered,
// ctx ends, stop is closed or the store closes, and returns the delivery in
// the message's own Slot. While the server cannot be reached it keeps
// asking, logging the errors, until ctx ends.
func (s *subState) ReceiveSlot(ctx context.Context, stop <-chan struct{}) (*driver.Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ps := s.st.ps
	s.st.startMover()
	f := &s.f
	f.mu.Lock()
	if m := s.popLocked(); m != nil {
		f.handOutLocked(m)
		s.refillLocked()
		f.mu.Unlock()
		return &m.slot, nil
	}
	f.wanting++
	defer func() {
		f.mu.Lock()
		f.wanting--
		s.watchIdleLocked()
		f.mu.Unlock()
	}()
	for {
		// f.mu is held here.
		if m := s.popLocked(); m != nil {
			f.handOutLocked(m)
			s.refillLocked()
			f.mu.Unlock()
			return &m.slot, nil
		}
		if !f.fetching {
			if err := f.err; errors.Is(err, pubsub.ErrNoSubscription) || errors.Is(err, ErrNoStream) {
				f.err = nil
				f.mu.Unlock()
				return nil, err
			}
		}
		if !s.refillLocked() {
			f.mu.Unlock()
			return nil, pubsub.ErrClosed
		}
		wake := f.waitLocked()
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		case <-stop:
		case <-ps.ctx.Done():
		}
		select {
		case <-stop:
			return nil, pubsub.ErrClosed
		case <-ps.ctx.Done():
			return nil, pubsub.ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.mu.Lock()
	}
}

// Receive is ReceiveSlot filling d.
func (s *subState) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	slot, err := s.ReceiveSlot(ctx, stop)
	if err != nil {
		return err
	}
	*d = slot.Delivery
	return nil
}

// refillLocked starts a fetch unless one runs or as many messages as the
// process should have ahead (aheadLocked) are kept already. It reports
// false if the store is closed. Called with s.f.mu held.
func (s *subState) refillLocked() bool {
	f := &s.f
	if f.fetching || len(f.pending) >= s.aheadLocked() {
		return true
	}
	if !s.st.ps.goBackground(s.fetch) {
		return false
	}
	f.fetching = true
	return true
}

// fetch runs one fetch for the subscription's Dequeues, in the
// background: it brings messages to pending, or records its error (and
// waits retryWait before the next fetch), and wakes the Dequeues. Its pull
// request ends with the PubSub, not with the Dequeue that started it: what
// it brings after that Dequeue left waits here for the next one, instead of
// going to a request nobody reads.
func (s *subState) fetch() {
	f := &s.f
	f.mu.Lock()
	f.pruneLocked()
	n, logged := s.aheadLocked()-len(f.pending), f.logged
	f.mu.Unlock()
	ps := s.st.ps
	var err error
	if n > 0 {
		if err = s.watchRestart(ps.ctx); err == nil {
			err = s.pull(ps.ctx, n)
		}
	}
	if err != nil && ps.ctx.Err() == nil && !errors.Is(err, pubsub.ErrNoSubscription) && !errors.Is(err, ErrNoStream) {
		ps.env.Report(pubsub.Failure{Kind: pubsub.FetchRetried, Topic: s.st.name, Subscription: s.name, Err: err})
		if ps.opts.OnFailure == nil && !logged {
			ps.opts.Logger.Warn("natspubsub: dequeue failed; retrying", "topic", s.st.name, "subscription", s.name, "error", err)
		}
		select {
		case <-time.After(retryWait):
		case <-ps.ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetching, f.err, f.logged = false, err, err != nil
	f.wakeLocked()
	s.watchIdleLocked()
	s.watchLapseLocked()
}

// pull asks for up to n messages ready now; when none is, it waits for
// one, until ctx ends or fetchWait passed. It keeps each message to hand
// out as it comes (acceptBatch); it returns no error when nothing came.
func (s *subState) pull(ctx context.Context, n int) error {
	cons, err := s.forDequeue(ctx)
	if err != nil {
		return err
	}
	batch, err := cons.FetchNoWait(min(n, maxFetch))
	if err != nil {
		return err
	}
	got, err := s.acceptBatch(batch, nil)
	if err != nil {
		s.recheck() // the consumer may be gone: look it up again
	}
	if got > 0 || err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	batch, err = cons.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		return err
	}
	got, err = s.acceptBatch(batch, fctx)
	if got == 0 && fctx.Err() != nil && ctx.Err() == nil {
		// A pull request to a consumer deleted meanwhile waits out its
		// time without an error: look the consumer up again.
		s.recheck()
	}
	return err
}

// acceptBatch keeps the messages of batch to hand out as each comes, so
// that a Dequeue takes the first while the rest are on their way, and
// returns how many deliveries batch brought and its error, unless the
// error is the end of fctx (a waiting request's own deadline).
func (s *subState) acceptBatch(batch jetstream.MessageBatch, fctx context.Context) (int, error) {
	got := 0
	for jm := range batch.Messages() {
		got++
		if m := s.accept(jm); m != nil {
			s.keepFetched(m)
		}
	}
	err := batch.Error()
	if err == nil || got > 0 || (fctx != nil && fctx.Err() != nil) {
		return got, nil
	}
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
		// Deleted (by DeleteSubscription here or in another process): no
		// fault. The next fetch looks the consumer up again: it declares
		// the default subscription again, and finds a named one gone
		// (pubsub.ErrNoSubscription) unless it was made again while this
		// request waited on the deleted consumer (a Subscribe after the
		// delete).
		s.forget()
		return 0, nil
	}
	return 0, err
}

// keepFetched adds m, fetched, to the messages kept to hand out, in the order
// they came, and wakes a waiting Dequeue. The give-back of a message kept
// too long is armed when the fetch ends (fetch), which a batch does at
// once: its pull request does not wait.
func (s *subState) keepFetched(m *message) {
	f := &s.f
	f.mu.Lock()
	f.pending = append(f.pending, m)
	f.wakeLocked()
	f.mu.Unlock()
}

// forDequeue returns the consumer a Dequeue reads: consuming the default
// subscription declares it; a named one must exist (Subscribe), else the
// error wraps pubsub.ErrNoSubscription.
func (s *subState) forDequeue(ctx context.Context) (jetstream.Consumer, error) {
	if s.name == pubsub.DefaultSubscription {
		return s.declare(ctx, nil)
	}
	c, _, err := s.lookup(ctx)
	if err == nil && c == nil {
		err = fmt.Errorf("%w %q", pubsub.ErrNoSubscription, s.name)
	}
	return c, err
}
