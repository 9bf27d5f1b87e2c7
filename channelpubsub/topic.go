package channelpubsub

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// topicState is one topic, shared by all its handles: its subscriptions,
// each a queue of its own, and where its publishes go.
type topicState struct {
	ps   *store
	name string
	// targets are the queues a publish goes to now: every subscription,
	// in name order, or the default's queue while the topic has none.
	// Replaced whole, under mu.
	targets atomic.Pointer[[]*queue]

	mu   sync.Mutex
	def  *queue            // the default subscription's queue, one of subs or not yet
	subs map[string]*queue // the subscriptions by name
}

var (
	_ driver.Topic          = (*topicState)(nil)
	_ driver.BatchPublisher = (*topicState)(nil)
)

func newTopicState(ps *store, name string) *topicState {
	ts := &topicState{ps: ps, name: name, subs: make(map[string]*queue)}
	ts.def = newQueue(ps, name, pubsub.DefaultSubscription)
	ts.retarget()
	return ts
}

// Subscription returns the consumer side of subscription sub.
func (ts *topicState) Subscription(sub string) driver.Subscription {
	s := &subscription{ts: ts, sub: sub}
	if sub == pubsub.DefaultSubscription {
		q, _ := ts.lookup(sub) // the default always has a queue
		s.q.Store(q)
	} else if q, err := ts.lookup(sub); err == nil {
		s.q.Store(q)
	}
	return s
}

// Publish adds m, ready at m.At (zero: now), to every queue the topic
// publishes to now; under a non-empty m.Key, only to those keeping no
// message with that key. It reports whether a copy was added. A single
// queue keeps m.Data itself when m.Owned. While a queue is full it
// blocks until there is room, ctx ends or stop is closed.
func (ts *topicState) Publish(ctx context.Context, stop <-chan struct{}, m driver.Outgoing) (bool, error) {
	qs := *ts.targets.Load()
	if len(qs) == 1 {
		switch err := qs[0].enqueue(ctx, m.Data, m.Header, m.Owned, m.At, m.Key, stop); {
		case errors.Is(err, errDuplicate):
			return false, nil
		case errors.Is(err, errStopped):
			return false, pubsub.ErrClosed
		case err != nil:
			return false, err
		}
		return true, nil
	}
	var to []*queue
	var es [][]*entry
	for _, q := range qs {
		e := q.newEntry(m.Data, m.Header)
		if m.Key != "" && !q.claimKey(m.Key, e) {
			continue
		}
		to, es = append(to, q), append(es, []*entry{e})
	}
	if len(to) == 0 {
		return false, nil
	}
	if delay := time.Until(m.At); !m.At.IsZero() && delay > 0 {
		for i, q := range to {
			e := es[i][0]
			e.mu.Lock()
			q.schedule(e, delay)
			e.mu.Unlock()
		}
		return true, nil
	}
	if err := ts.pushEach(ctx, stop, to, es); err != nil {
		for i, q := range to {
			q.releaseKey(es[i][0])
		}
		return false, err
	}
	return true, nil
}

// PublishBatch publishes copies of every item, in order, all or none, to
// every subscription: the batch waits (honouring ctx) for each
// subscription's batch slot, then goes in whole. Items that do not fit in
// a subscription's channel wait for room in a goroutine the store owns,
// in order; one such batch at a time per subscription, so a producer
// still feels backpressure.
func (ts *topicState) PublishBatch(ctx context.Context, stop <-chan struct{}, b driver.Batch) error {
	qs := *ts.targets.Load()
	es := make([][]*entry, len(qs))
	for i, q := range qs {
		es[i] = make([]*entry, len(b.Data))
		for j, d := range b.Data {
			es[i][j] = q.newEntry(d, b.Header)
		}
	}
	return ts.pushEach(ctx, stop, qs, es)
}

// pushEach makes the entries es[i], in order, ready in qs[i], for every i
// or for none: it takes each queue's batch slot (honouring ctx), in the
// order of qs, which every publish takes in name order, then pushes them
// all. The entries that do not fit wait for room in goroutines the store
// owns, holding the slots (see queue.pushAll). A queue whose subscription
// is deleted meanwhile is skipped: its copies would go with it.
func (ts *topicState) pushEach(ctx context.Context, stop <-chan struct{}, qs []*queue, es [][]*entry) error {
	held := make([]bool, len(qs))
	fail := func(err error) error {
		for i, q := range qs {
			if held[i] {
				<-q.batchSlot
			}
		}
		return err
	}
	for i, q := range qs {
		select {
		case q.batchSlot <- struct{}{}:
			held[i] = true
		case <-q.gone:
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-stop:
			return fail(pubsub.ErrClosed)
		case <-ts.ps.closed:
			return fail(pubsub.ErrClosed)
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	for i, q := range qs {
		if held[i] {
			q.pushAll(es[i])
		}
	}
	return nil
}

// subscribe returns the queue of subscription sub, making it one of the
// topic's subscriptions first if it is not: a new queue for a name, the
// default's own queue (with the copies it kept) for the default.
func (ts *topicState) subscribe(sub string, retry *pubsub.RetryPolicy) *queue {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if q, ok := ts.subs[sub]; ok {
		return q
	}
	q := ts.def
	if sub != pubsub.DefaultSubscription {
		q = newQueue(ts.ps, ts.name, sub)
	}
	if retry != nil {
		q.retry.Store(retry)
	}
	q.subscribed.Store(true)
	ts.subs[sub] = q
	ts.retarget()
	return q
}

// lookup returns the queue of subscription sub, or pubsub.ErrNoSubscription.
// The default subscription always has a queue, a subscription or not.
func (ts *topicState) lookup(sub string) (*queue, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if sub == pubsub.DefaultSubscription {
		return ts.def, nil
	}
	if q, ok := ts.subs[sub]; ok {
		return q, nil
	}
	return nil, pubsub.ErrNoSubscription
}

// unsubscribe deletes subscription sub and its copies. A deleted default
// gets a new, empty queue, which is no subscription until consumed from
// or declared.
func (ts *topicState) unsubscribe(sub string) error {
	ts.mu.Lock()
	q, ok := ts.subs[sub]
	if !ok {
		ts.mu.Unlock()
		return pubsub.ErrNoSubscription
	}
	delete(ts.subs, sub)
	if q == ts.def {
		ts.def = newQueue(ts.ps, ts.name, pubsub.DefaultSubscription)
	}
	ts.retarget()
	ts.mu.Unlock()
	q.drop()
	return nil
}

// names returns the subscriptions' names, sorted. Called with mu held.
func (ts *topicState) names() []string {
	names := make([]string, 0, len(ts.subs))
	for name := range ts.subs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// retarget sets targets from the subscriptions. Called with mu held.
func (ts *topicState) retarget() {
	qs := []*queue{ts.def}
	if len(ts.subs) > 0 {
		qs = qs[:0]
		for _, name := range ts.names() {
			qs = append(qs, ts.subs[name])
		}
	}
	ts.targets.Store(&qs)
}

// queues returns every queue of the topic: its subscriptions', and the
// default's while it is none.
func (ts *topicState) queues() []*queue {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	qs := make([]*queue, 0, len(ts.subs)+1)
	for _, q := range ts.subs {
		qs = append(qs, q)
	}
	if !ts.def.subscribed.Load() {
		qs = append(qs, ts.def)
	}
	return qs
}
