package natspubsub

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// store is the JetStream driver.Store: the connection, the topics' streams
// and consumers as found or made, and the goroutines that fetch, move
// delayed messages and prune.
type store struct {
	nc    *nats.Conn
	owned bool // Connect made nc: Close closes it
	js    jetstream.JetStream
	opts  resolved
	env   driver.Env

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	bg     sync.WaitGroup // the goroutines that end at Close (goBackground)
	info   chan struct{}  // holds a token while an Info call runs (streamInfo)
	watch  connWatch      // notices a silent connection (conn.go)

	mu     sync.Mutex
	closed bool
	topics map[string]*topicState
}

var (
	_ driver.Store         = (*store)(nil)
	_ driver.Subscriptions = (*store)(nil)
	_ driver.TopicLister   = (*store)(nil)
)

func newStore(nc *nats.Conn, owned bool, js jetstream.JetStream, o resolved) *store {
	ps := &store{nc: nc, owned: owned, js: js, opts: o, topics: map[string]*topicState{}, info: make(chan struct{}, 1)}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	return ps
}

// Open keeps env. The store honours delays and unique keys; a NATS
// publish takes part in no transaction.
func (ps *store) Open(env driver.Env) (driver.Features, error) {
	ps.env = env
	return driver.Delay | driver.Unique, nil
}

// Topic returns the topic name, its state made on first use.
func (ps *store) Topic(name string) driver.Topic { return ps.topic(name) }

// Close ends the store's requests and goroutines, gives the messages
// fetched and never handed out back to the server, and closes a
// connection made by Connect.
func (ps *store) Close() error {
	ps.mu.Lock()
	ps.closed = true
	ps.mu.Unlock()
	ps.cancel()
	ps.bg.Wait()
	ps.giveBackPending()
	if ps.owned {
		ps.nc.Close()
	}
	return nil
}

// giveBackPending gives the messages fetched and never handed out back to
// the server, for the other processes' consumers.
func (ps *store) giveBackPending() {
	ps.mu.Lock()
	topics := make([]*topicState, 0, len(ps.topics))
	for _, st := range ps.topics {
		topics = append(topics, st)
	}
	ps.mu.Unlock()
	for _, st := range topics {
		st.mu.Lock()
		subs := make([]*subState, 0, len(st.subs))
		for _, s := range st.subs {
			subs = append(subs, s)
		}
		st.mu.Unlock()
		for _, s := range subs {
			ctx, cancel := ps.closingRequest(context.Background())
			s.giveBack(ctx, ps.closingRequest, s.f.takePending())
			cancel()
		}
	}
}

// streamInfo asks for the information of s, a stream other goroutines may
// share: nats.go keeps the answer in the object without a lock, so a
// store makes one such call at a time.
func (ps *store) streamInfo(ctx context.Context, s jetstream.Stream, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	return oneInfo(ctx, ps, func() (*jetstream.StreamInfo, error) { return s.Info(ctx, opts...) })
}

// consumerInfo is streamInfo for a consumer.
func (ps *store) consumerInfo(ctx context.Context, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
	return oneInfo(ctx, ps, func() (*jetstream.ConsumerInfo, error) { return c.Info(ctx) })
}

// oneInfo makes the Info call info in its turn (takeInfo).
func oneInfo[T any](ctx context.Context, ps *store, info func() (T, error)) (T, error) {
	if err := ps.takeInfo(ctx); err != nil {
		var zero T
		return zero, err
	}
	defer func() { <-ps.info }()
	return info()
}

// takeInfo waits for the turn of an Info call, until ctx ends.
func (ps *store) takeInfo(ctx context.Context) error {
	select {
	case ps.info <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goBackground runs f in a goroutine that Close waits for, unless the
// store is closed; it reports whether it did.
func (ps *store) goBackground(f func()) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return false
	}
	ps.bg.Go(f)
	return true
}

// isClosed reports whether Close was called.
func (ps *store) isClosed() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.closed
}

// request returns ctx bounded by Options.RequestTimeout and by Close.
func (ps *store) request(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, ps.opts.RequestTimeout)
	stop := context.AfterFunc(ps.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// topic returns the state of topic name, made on first use.
func (ps *store) topic(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	st := ps.topics[name]
	if st == nil {
		st = &topicState{ps: ps, name: name, n: topicNames(ps.opts.Prefix, name), subs: map[string]*subState{}}
		ps.topics[name] = st
	}
	return st
}

// retryWait is how long a fetch waits after the server failed it before
// it asks again.
const retryWait = 250 * time.Millisecond
