package channelpubsub

import (
	"context"
	"fmt"
	"github.com/conveyorgo/conveyor/internal/failhook"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// PubSub is the in-process backend. Create it with New or NewWithOptions;
// stop it with Close.
type PubSub struct {
	opts       Options
	closed     chan struct{}
	isShut     atomic.Bool // closed, readable without a select
	once       sync.Once
	wg         sync.WaitGroup // the lease sweeper, and redeliveries waiting for room
	clock      atomic.Int64   // unix nanoseconds, advanced by the sweeper
	sweepEvery time.Duration

	mu     sync.Mutex
	topics map[string]*topicState

	nextID atomic.Uint64

	fails *failhook.Reporter // Options.OnFailure's
}

var _ pubsub.PubSub = (*PubSub)(nil)

// New returns a PubSub with the default Options.
func New() *PubSub {
	ps, err := NewWithOptions(Options{})
	if err != nil {
		panic(err) // the zero Options are always valid
	}
	return ps
}

// NewWithOptions returns a PubSub configured by opts, or an error naming the
// first field of opts that makes no sense.
func NewWithOptions(opts Options) (*PubSub, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ps := &PubSub{opts: o, closed: make(chan struct{}), topics: make(map[string]*topicState), fails: failhook.New(o.OnFailure)}
	ps.sweepEvery = min(max(o.Lease/8, 5*time.Millisecond), 250*time.Millisecond)
	ps.clock.Store(time.Now().UnixNano())
	ps.wg.Add(1)
	go ps.sweep()
	return ps, nil
}

// sweep owns the coarse clock leases are measured with, hands out again
// every message whose lease ran out, and forgets the dead messages past
// Options.DeadRetention. Reading a clock and arming a timer per
// delivery cost more than the rest of a round trip; a lease instead ends
// between Lease and Lease plus two sweeps after its delivery.
func (ps *PubSub) sweep() {
	defer ps.wg.Done()
	tick := time.NewTicker(ps.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ps.closed:
			return
		case now := <-tick.C:
			ps.clock.Store(now.UnixNano())
			for _, q := range ps.queues() {
				q.expireLeases(now.UnixNano())
				if ps.opts.DeadRetention > 0 {
					q.pruneDead(now.Add(-ps.opts.DeadRetention))
				}
			}
		}
	}
}

// leaseEnd is when a lease of d taken now ends, by the coarse clock; it
// rounds up by one sweep so that a lease never ends early.
func (ps *PubSub) leaseEnd(d time.Duration) int64 {
	return ps.clock.Load() + int64(d) + int64(ps.sweepEvery)
}

// Topic returns a handle on the topic name: its enqueues publish to the
// topic, its Dequeue reads the default subscription. Handles on one name
// share its messages; closing a handle does not affect the others. A name
// that pubsub.ValidateTopicName rejects gives a handle whose methods all
// return that error.
func (ps *PubSub) Topic(name string) pubsub.Topic {
	if bad := backend.CheckTopicName("channelpubsub", name); bad != nil {
		return bad
	}
	ts := ps.topic(name)
	q, _ := ts.lookup(pubsub.DefaultSubscription) // the default always has a queue
	return newHandle(ts, pubsub.DefaultSubscription, q)
}

// Close stops the PubSub: every topic handle returns pubsub.ErrClosed from
// then on, blocked calls return, pending timers are stopped and the
// goroutines it started (a lease sweeper, and redeliveries waiting for room)
// have ended when Close returns. Messages still held
// are dropped with the process's memory. A second Close returns
// pubsub.ErrClosed.
func (ps *PubSub) Close() error {
	err := fmt.Errorf("channelpubsub: %w", pubsub.ErrClosed)
	ps.once.Do(func() {
		err = nil
		ps.isShut.Store(true)
		close(ps.closed)
		for _, q := range ps.queues() {
			q.stopTimers()
		}
		ps.wg.Wait()
		ps.fails.Close()
	})
	return err
}

// Shutdown closes ps; it lets a dependency injector stop it.
func (ps *PubSub) Shutdown(context.Context) error { return ps.Close() }

func (ps *PubSub) isClosed() bool { return ps.isShut.Load() }

// topic returns the state of the topic name, made on first use.
func (ps *PubSub) topic(name string) *topicState {
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
func (ps *PubSub) findTopic(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.topics[name]
}

// queues returns the queues of every topic.
func (ps *PubSub) queues() []*queue {
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
