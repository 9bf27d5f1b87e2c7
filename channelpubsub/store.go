package channelpubsub

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// store is the in-memory driver.Store: its topics, each with its
// subscriptions' queues, and the lease sweeper.
type store struct {
	opts       Options
	env        driver.Env
	closed     chan struct{}
	isShut     atomic.Bool    // closed, readable without a select
	wg         sync.WaitGroup // the lease sweeper, and redeliveries waiting for room
	clock      atomic.Int64   // the coarse clock: nanoseconds on the store's line (ackcount.go), advanced by the sweeper
	epoch      time.Time      // the store's making, with its monotonic reading (ackcount.go)
	epochNano  int64          // epoch in unix nanoseconds
	sweeps     sweepLog       // when the sweeps advanced clock
	sweepEvery time.Duration

	mu     sync.Mutex
	topics map[string]*topicState

	nextID atomic.Uint64
}

var (
	_ driver.Store         = (*store)(nil)
	_ driver.Subscriptions = (*store)(nil)
	_ driver.TopicLister   = (*store)(nil)
)

func newStore(o Options) *store {
	now := time.Now()
	return &store{opts: o, epoch: now, epochNano: now.UnixNano(), closed: make(chan struct{}), topics: make(map[string]*topicState)}
}

// Open starts the lease sweeper. The store honours delays and unique
// keys; memory takes part in no transaction.
func (ps *store) Open(env driver.Env) (driver.Features, error) {
	ps.env = env
	ps.opts.Retry, ps.opts.Lease = env.Defaults.Retry, env.Defaults.Lease
	ps.sweepEvery = min(max(ps.opts.Lease/8, 5*time.Millisecond), 250*time.Millisecond)
	ps.tick(time.Now())
	ps.wg.Add(1)
	go ps.sweep()
	return driver.Delay | driver.Unique, nil
}

// Close stops the timers and the goroutines the store started, and waits
// for them.
func (ps *store) Close() error {
	ps.isShut.Store(true)
	close(ps.closed)
	for _, q := range ps.queues() {
		q.stopTimers()
	}
	ps.wg.Wait()
	return nil
}

// sweep owns the coarse clock leases are measured with, hands out again
// every message whose lease ran out, and forgets the dead messages past
// Options.DeadRetention. Reading a clock and arming a timer per
// delivery cost more than the rest of a round trip; a lease instead ends
// between Lease and Lease plus two sweeps after its delivery.
func (ps *store) sweep() {
	defer ps.wg.Done()
	tick := time.NewTicker(ps.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ps.closed:
			return
		case now := <-tick.C:
			stamp := ps.tick(now)
			for _, q := range ps.queues() {
				q.expireLeases(stamp)
				if ps.opts.DeadRetention > 0 {
					q.pruneDead(now.Add(-ps.opts.DeadRetention))
				}
			}
		}
	}
}

// leaseEnd is when a lease of d taken now ends, by the coarse clock; it
// rounds up by one sweep so that a lease never ends early.
func (ps *store) leaseEnd(d time.Duration) int64 {
	return ps.clock.Load() + int64(d) + int64(ps.sweepEvery)
}

func (ps *store) isClosed() bool { return ps.isShut.Load() }

// Topic returns the topic name, made on first use.
func (ps *store) Topic(name string) driver.Topic { return ps.topic(name) }

// topic returns the state of the topic name, made on first use.
func (ps *store) topic(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ts, ok := ps.topics[name]
	if !ok {
		ts = newTopicState(ps, name)
		ps.topics[name] = ts
	}
	return ts
}

// findTopic returns the state of the topic name, or nil if it was never used.
func (ps *store) findTopic(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.topics[name]
}

// queues returns the queues of every topic.
func (ps *store) queues() []*queue {
	ps.mu.Lock()
	tss := make([]*topicState, 0, len(ps.topics))
	for _, ts := range ps.topics {
		tss = append(tss, ts)
	}
	ps.mu.Unlock()
	var qs []*queue
	for _, ts := range tss {
		qs = append(qs, ts.queues()...)
	}
	return qs
}

// Subscribe makes sub one of the topic's subscriptions unless it is: a
// new queue for a name, the default's own queue (with the copies it kept)
// for the default, with cfg's retry policy when it is its own (the lease is
// the store's). It returns the subscription's configuration, kept in
// memory.
func (ps *store) Subscribe(_ context.Context, topic, sub string, cfg driver.SubscriptionConfig) (driver.SubscriptionConfig, error) {
	var own *pubsub.RetryPolicy
	if cfg.Own {
		own = &cfg.Retry
	}
	q := ps.topic(topic).subscribe(sub, own)
	return driver.SubscriptionConfig{Retry: q.retryPolicy(), Lease: ps.opts.Lease, Own: q.retry.Load() != nil}, nil
}

// Subscriptions lists the subscriptions of topic, sorted by name.
func (ps *store) Subscriptions(_ context.Context, topic string) ([]string, error) {
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
// subscription's handles read a new default).
func (ps *store) DeleteSubscription(_ context.Context, topic, sub string) error {
	ts := ps.findTopic(topic)
	if ts == nil {
		return pubsub.ErrNoSubscription
	}
	return ts.unsubscribe(sub)
}

// Topics returns every topic used, with its subscriptions.
func (ps *store) Topics(context.Context) ([]admin.TopicInfo, error) {
	ps.mu.Lock()
	tss := make([]*topicState, 0, len(ps.topics))
	for _, ts := range ps.topics {
		tss = append(tss, ts)
	}
	ps.mu.Unlock()
	out := make([]admin.TopicInfo, len(tss))
	for i, ts := range tss {
		ts.mu.Lock()
		out[i] = admin.TopicInfo{Name: ts.name, Subscriptions: ts.names()}
		ts.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b admin.TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}
