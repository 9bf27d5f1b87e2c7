package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/failhook"
	"github.com/conveyorgo/conveyor/pubsub"
)

// PubSub is the NATS JetStream backend: a pubsub.PubSub whose topics are
// streams and whose subscriptions are durable pull consumers on them,
// shared by every process that uses the same server and Options.Prefix.
// Make it with New or Connect; it is safe for concurrent use.
type PubSub struct {
	nc    *nats.Conn
	owned bool // Connect made nc: Close closes it
	js    jetstream.JetStream
	opts  resolved

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	bg     sync.WaitGroup // the goroutines that end at Close (goBackground)
	info   chan struct{}  // holds a token while an Info call runs (streamInfo)
	watch  connWatch      // notices a silent connection (conn.go)

	mu     sync.Mutex
	closed bool
	topics map[string]*topicState

	fails *failhook.Reporter // Options.OnFailure's
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
)

// New returns a PubSub on nc, a connection the caller keeps and closes
// after the PubSub. A bad option, or a server without JetStream, is an
// error naming it. Make nc with ConnectOptions(opts) among its options:
// with nats.go's defaults a connection that went silent is noticed after
// minutes, and a writer can block for a minute on a full socket buffer.
// Whatever its options, after two request timeouts in a row the PubSub
// pings the server, and if no answer comes within Options.RequestTimeout
// it makes nc reconnect (nc.ForceReconnect).
func New(nc *nats.Conn, opts Options) (*PubSub, error) {
	if nc == nil {
		return nil, errors.New("natspubsub: New: nil *nats.Conn")
	}
	return newPubSub(nc, false, opts)
}

// Connect connects to the server at url (a comma-separated list for a
// cluster) and returns a PubSub that owns the connection: Close closes it.
// The connection reconnects by itself, with the settings of ConnectOptions
// (pings and socket writes bounded by Options.RequestTimeout); while it is
// down, calls fail or wait as their ctx allows.
func Connect(url string, opts Options) (*PubSub, error) {
	if _, err := opts.resolve(0); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, append(ConnectOptions(opts), nats.Name("conveyor"), nats.MaxReconnects(-1))...)
	if err != nil {
		return nil, fmt.Errorf("natspubsub: connecting to %s: %w", url, err)
	}
	ps, err := newPubSub(nc, true, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return ps, nil
}

func newPubSub(nc *nats.Conn, owned bool, opts Options) (*PubSub, error) {
	o, err := opts.resolve(int(nc.MaxPayload()))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(o.RequestTimeout))
	if err != nil {
		return nil, fmt.Errorf("natspubsub: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.RequestTimeout)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("natspubsub: the server at %s has no JetStream for this account (start nats-server with -js): %w", nc.ConnectedUrlRedacted(), err)
	}
	ps := &PubSub{nc: nc, owned: owned, js: js, opts: o, topics: map[string]*topicState{}, info: make(chan struct{}, 1),
		fails: failhook.New(o.OnFailure)}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	return ps, nil
}

// Topic returns a handle on topic name: its Enqueue publishes to the
// topic, its Dequeue reads the topic's default subscription. A name
// pubsub.ValidateTopicName rejects gets a handle whose every call returns
// that error.
func (ps *PubSub) Topic(name string) pubsub.Topic {
	if bad := backend.CheckTopicName("natspubsub", name); bad != nil {
		return bad
	}
	return ps.handle(ps.topic(name), pubsub.DefaultSubscription)
}

// Close stops the PubSub: every handle returns pubsub.ErrClosed from then
// on and blocked calls return. Messages fetched but not handed to a
// consumer are given back; deliveries already handed out can still be
// settled while the connection is open, and otherwise come back when their
// lease runs out. A connection made by Connect is closed; one given to New
// is not. A second Close returns an error wrapping pubsub.ErrClosed.
func (ps *PubSub) Close() error {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return fmt.Errorf("natspubsub: %w", pubsub.ErrClosed)
	}
	ps.closed = true
	ps.mu.Unlock()
	ps.cancel()
	ps.bg.Wait()
	ps.giveBackPending()
	if ps.owned {
		ps.nc.Close()
	}
	ps.fails.Close()
	return nil
}

// Shutdown is Close; it returns by the time ctx ends even if the server
// does not answer.
func (ps *PubSub) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- ps.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("natspubsub: shutdown: %w", ctx.Err())
	}
}

// giveBackPending gives the messages fetched and never handed out back to
// the server, for the other processes' consumers.
func (ps *PubSub) giveBackPending() {
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
// PubSub makes one such call at a time.
func (ps *PubSub) streamInfo(ctx context.Context, s jetstream.Stream, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	return oneInfo(ctx, ps, func() (*jetstream.StreamInfo, error) { return s.Info(ctx, opts...) })
}

// consumerInfo is streamInfo for a consumer.
func (ps *PubSub) consumerInfo(ctx context.Context, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
	return oneInfo(ctx, ps, func() (*jetstream.ConsumerInfo, error) { return c.Info(ctx) })
}

// oneInfo makes the Info call info in its turn (takeInfo).
func oneInfo[T any](ctx context.Context, ps *PubSub, info func() (T, error)) (T, error) {
	if err := ps.takeInfo(ctx); err != nil {
		var zero T
		return zero, err
	}
	defer func() { <-ps.info }()
	return info()
}

// takeInfo waits for the turn of an Info call, until ctx ends.
func (ps *PubSub) takeInfo(ctx context.Context) error {
	select {
	case ps.info <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goBackground runs f in a goroutine that Close waits for, unless the
// PubSub is closed; it reports whether it did.
func (ps *PubSub) goBackground(f func()) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return false
	}
	ps.bg.Go(f)
	return true
}

// isClosed reports whether Close was called.
func (ps *PubSub) isClosed() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.closed
}

// request returns ctx bounded by Options.RequestTimeout and by Close.
func (ps *PubSub) request(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, ps.opts.RequestTimeout)
	stop := context.AfterFunc(ps.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// topic returns the state of topic name, made on first use.
func (ps *PubSub) topic(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	st := ps.topics[name]
	if st == nil {
		st = &topicState{ps: ps, name: name, n: topicNames(ps.opts.Prefix, name), subs: map[string]*subState{}}
		ps.topics[name] = st
	}
	return st
}

// handle returns a new handle on subscription sub of st.
func (ps *PubSub) handle(st *topicState, sub string) *Topic {
	t := &Topic{st: st, sub: st.sub(sub), h: backend.NewHandle()}
	t.closed, t.closeCtx = context.WithCancel(context.Background())
	return t
}

// retryWait is how long a Dequeue waits after the server failed it before
// it asks again.
const retryWait = 250 * time.Millisecond

// MaxDataSize is the largest payload Enqueue takes, in bytes
// (Options.MaxDataSize, or its default under the server's max_payload).
func (ps *PubSub) MaxDataSize() int { return ps.opts.MaxDataSize }
