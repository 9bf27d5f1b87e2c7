package channelpubsub

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

var _ pubsub.Subscriber = (*PubSub)(nil)

// topicState is one topic, shared by all its handles: its subscriptions,
// each a queue of its own, and where its publishes go.
type topicState struct {
	ps   *PubSub
	name string
	// targets are the queues a publish goes to now: every subscription,
	// in name order, or the default's queue while the topic has none.
	// Replaced whole, under mu.
	targets atomic.Pointer[[]*queue]

	mu   sync.Mutex
	def  *queue            // the default subscription's queue, one of subs or not yet
	subs map[string]*queue // the subscriptions by name
}

func newTopicState(ps *PubSub, name string) *topicState {
	ts := &topicState{ps: ps, name: name, subs: make(map[string]*queue)}
	ts.def = newQueue(ps, name, pubsub.DefaultSubscription)
	ts.retarget()
	return ts
}

// Subscribe creates subscription sub of topic unless it exists and returns
// a handle on it: its Dequeue reads sub's copies, its enqueues publish to
// the topic, its dead letters, stats and inbox are sub's (see
// pubsub.Subscriber). Subscribe with pubsub.DefaultSubscription makes the
// default subscription, the one Topic(topic) reads, one of the topic's.
func (ps *PubSub) Subscribe(ctx context.Context, topic, sub string) (pubsub.Topic, error) {
	if err := ps.checkSubscription(ctx, topic, sub); err != nil {
		return nil, err
	}
	ts := ps.topic(topic)
	return newHandle(ts, sub, ts.subscribe(sub)), nil
}

// Subscriptions lists the subscriptions of topic, sorted by name.
func (ps *PubSub) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	if err := pubsub.ValidateTopicName(topic); err != nil {
		return nil, fmt.Errorf("channelpubsub: %w", err)
	}
	if err := ps.usable(ctx, backend.Label(topic, pubsub.DefaultSubscription)); err != nil {
		return nil, err
	}
	ts := ps.findTopic(topic)
	if ts == nil {
		return []string{}, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.names(), nil
}

// DeleteSubscription deletes subscription sub of topic and every copy it
// keeps; the other subscriptions are untouched. Its deliveries in hand
// then fail to settle with pubsub.ErrLeaseExpired, and its handles return
// pubsub.ErrNoSubscription until it is created again (the default
// subscription's handles read a new default). It wraps
// pubsub.ErrNoSubscription when topic has no subscription sub.
func (ps *PubSub) DeleteSubscription(ctx context.Context, topic, sub string) error {
	if err := ps.checkSubscription(ctx, topic, sub); err != nil {
		return err
	}
	ts := ps.findTopic(topic)
	if ts == nil {
		return noSubscription(topic, sub)
	}
	return ts.unsubscribe(sub)
}

// checkSubscription checks a topic and a subscription name given to the
// PubSub, and that the PubSub can serve them.
func (ps *PubSub) checkSubscription(ctx context.Context, topic, sub string) error {
	if err := pubsub.ValidateSubscription(topic, sub); err != nil {
		return fmt.Errorf("channelpubsub: %w", err)
	}
	return ps.usable(ctx, backend.Label(topic, sub))
}

// usable fails when ctx ended or ps is closed; what names the subject.
func (ps *PubSub) usable(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ps.isClosed() {
		return fmt.Errorf("channelpubsub: %s: %w", what, pubsub.ErrClosed)
	}
	return nil
}

func noSubscription(topic, sub string) error {
	return fmt.Errorf("channelpubsub: topic %q has no subscription %q: %w", topic, sub, pubsub.ErrNoSubscription)
}

// subscribe returns the queue of subscription sub, making it one of the
// topic's subscriptions first if it is not: a new queue for a name, the
// default's own queue (with the copies it kept) for the default.
func (ts *topicState) subscribe(sub string) *queue {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if q, ok := ts.subs[sub]; ok {
		return q
	}
	q := ts.def
	if sub != pubsub.DefaultSubscription {
		q = newQueue(ts.ps, ts.name, sub)
	}
	q.subscribed.Store(true)
	ts.subs[sub] = q
	ts.retarget()
	return q
}

// lookup returns the queue of subscription sub, or an error wrapping
// pubsub.ErrNoSubscription. The default subscription always has a queue,
// a subscription or not.
func (ts *topicState) lookup(sub string) (*queue, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if sub == pubsub.DefaultSubscription {
		return ts.def, nil
	}
	if q, ok := ts.subs[sub]; ok {
		return q, nil
	}
	return nil, noSubscription(ts.name, sub)
}

// unsubscribe deletes subscription sub and its copies. A deleted default
// gets a new, empty queue, which is no subscription until consumed from
// or declared.
func (ts *topicState) unsubscribe(sub string) error {
	ts.mu.Lock()
	q, ok := ts.subs[sub]
	if !ok {
		ts.mu.Unlock()
		return noSubscription(ts.name, sub)
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

// enqueueContext returns the header an enqueue called with ctx gives its
// messages (pubsub.WithHeader), and fails the enqueue if that header is
// invalid or if it is asked to run in the caller's transaction
// (pubsub.WithTx): memory cannot take part in one, and enqueueing anyway
// would lose the atomicity the caller asked for.
func (ts *topicState) enqueueContext(ctx context.Context) (pubsub.Header, error) {
	if tx := pubsub.TxFrom(ctx); tx != nil {
		return nil, fmt.Errorf("channelpubsub: enqueue on topic %q in a transaction (%T): the in-memory backend cannot take part in one: %w", ts.name, tx, pubsub.ErrUnsupported)
	}
	h, err := pubsub.HeaderFrom(ctx)
	if err != nil {
		return nil, fmt.Errorf("channelpubsub: enqueue on topic %q: %w", ts.name, err)
	}
	return h, nil
}

// newHandle returns a handle on subscription sub of ts, whose queue is q.
func newHandle(ts *topicState, sub string, q *queue) *topic {
	t := &topic{ts: ts, sub: sub, label: backend.Label(ts.name, sub), h: backend.NewHandle()}
	t.q.Store(q)
	return t
}
