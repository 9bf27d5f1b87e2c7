package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
)

// topicState is what the store knows of one topic: its names on the server
// and its stream, found or made on first use.
type topicState struct {
	ps   *store
	name string
	n    names

	mu     sync.Mutex
	stream jetstream.Stream // nil until ensured
	// publishable: the topic was seen with a consumer, so a publish is
	// kept (ensurePublishable).
	publishable bool
	dead        jetstream.Stream   // nil until a message died or the dead letters were asked for
	kv          jetstream.KeyValue // the inbox, nil until the first claim
	kvRead      jetstream.KeyValue // the inbox found to read records (record.go), nil until found
	sched       jetstream.Stream   // the schedule of delayed messages, nil until used
	mover       jetstream.Consumer // its consumer, nil until used
	moving      atomic.Bool        // this store runs the mover's and the pruner's loops (delay.go, prune.go)
	purged      uint64             // the stream is purged up to here (prune.go)
	acked       atomic.Int64       // acks since the last prune
	subs        map[string]*subState
}

// sub returns the state of subscription name of st, made on first use.
func (st *topicState) sub(name string) *subState {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.subs[name]
	if s == nil {
		s = &subState{st: st, name: name, tok: token(name)}
		s.DeadLetters = logstore.DeadLetters{Log: deadLog{s}, ValidID: validID}
		st.subs[name] = s
	}
	return s
}

// ensure returns the topic's stream, creating it (or updating its
// configuration to this version's) on first use.
func (st *topicState) ensure(ctx context.Context) (jetstream.Stream, error) {
	cfg := st.topicConfig()
	return st.open(ctx, &st.stream, st.n.stream, &cfg)
}

// find returns the topic's stream if it exists, nil if not, without
// creating it.
func (st *topicState) find(ctx context.Context) (jetstream.Stream, error) {
	return st.open(ctx, &st.stream, st.n.stream, nil)
}

// open returns the stream kept in *slot, else the stream called name,
// which it creates with cfg (or brings to cfg) when cfg is not nil; nil
// when it does not exist and cfg is nil. With Options.Bind it creates
// nothing, and a missing stream it would create is ErrNoStream. What it
// finds it keeps in *slot.
func (st *topicState) open(ctx context.Context, slot *jetstream.Stream, name string, cfg *jetstream.StreamConfig) (jetstream.Stream, error) {
	st.mu.Lock()
	s := *slot
	st.mu.Unlock()
	if s != nil {
		return s, nil
	}
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	var err error
	if cfg != nil && !st.ps.opts.Bind {
		err = retryStoreCreate(rctx, func() (err error) {
			s, err = st.ps.js.CreateOrUpdateStream(rctx, *cfg)
			return err
		})
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStreamInvalidConfig {
			// A stream made otherwise (by an earlier version, with
			// interest retention, say) that the server will not change:
			// used as it is.
			st.ps.opts.Logger.Warn("natspubsub: the stream's configuration differs from this version's and cannot be changed; using it as it is",
				"stream", name, "topic", st.name, "error", err)
			s, err = st.ps.js.Stream(rctx, name)
		}
	} else if s, err = st.ps.js.Stream(rctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
		if cfg != nil {
			return nil, fmt.Errorf("stream %s of %s: %w (Options.Bind: the operator makes it, see PubSub.Provision)",
				name, backend.Label(st.name, pubsub.DefaultSubscription), ErrNoStream)
		}
		return nil, nil
	}
	if err != nil {
		return nil, st.ps.fail(ctx, fmt.Sprintf("opening stream %s of %s", name, backend.Label(st.name, pubsub.DefaultSubscription)), err)
	}
	st.mu.Lock()
	*slot = s
	st.mu.Unlock()
	return s, nil
}

// errCodeStreamInvalidConfig is the server's error code for a stream
// configuration it refuses, such as a change of retention.
const errCodeStreamInvalidConfig jetstream.ErrorCode = 10052

// errCodeStoreCreate is the server's error code for a stream whose store
// it could not create.
const errCodeStoreCreate jetstream.ErrorCode = 10049

// retryStoreCreate calls create, and again, up to twice more, while the
// server says it could not create the stream's store: a NATS 2.9 server
// that just deleted an account's last stream may remove the account's
// store directory as another stream is created in it.
func retryStoreCreate(ctx context.Context, create func() error) error {
	for attempt := 1; ; attempt++ {
		err := create()
		var apiErr *jetstream.APIError
		if attempt == 3 || !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeStoreCreate {
			return err
		}
		select {
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// ensurePublishable makes sure a publish is kept for a consumer: a topic
// without subscriptions gets its default one's consumer, held in reserve
// (not listed, see subscription.go) until the default is consumed; a
// stream with interest retention (made by an earlier version) would drop
// the message otherwise, and a later consumer would not get it. It looks
// once per store and topic.
func (st *topicState) ensurePublishable(ctx context.Context) error {
	st.mu.Lock()
	ok := st.publishable
	st.mu.Unlock()
	if ok {
		return nil
	}
	s, err := st.ensure(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	info, err := st.ps.streamInfo(rctx, s)
	if err != nil {
		return st.ps.fail(ctx, "looking up the stream of "+backend.Label(st.name, pubsub.DefaultSubscription), err)
	}
	if info.State.Consumers == 0 {
		if err := st.sub(pubsub.DefaultSubscription).reserve(ctx, s); err != nil {
			return err
		}
	}
	st.mu.Lock()
	st.publishable = true
	st.mu.Unlock()
	return nil
}

// deadStream returns the topic's dead-letter stream, made on first use
// when create is set; else nil when it does not exist.
func (st *topicState) deadStream(ctx context.Context, create bool) (jetstream.Stream, error) {
	var cfg *jetstream.StreamConfig
	if create {
		c := st.deadConfig()
		cfg = &c
	}
	return st.open(ctx, &st.dead, st.n.deadStream, cfg)
}

// subState is what the store knows of one subscription of a topic: its
// durable consumer.
type subState struct {
	// DeadLetters is the subscription's dead-letter ability
	// (driver.DeadLetters, driver.DeadDeleter), the log layer's over
	// its dead log (dead.go).
	logstore.DeadLetters

	st   *topicState
	name string
	tok  string

	mu   sync.Mutex
	cons jetstream.Consumer // nil until found or made
	desc consumerDesc       // its description
	// created is when the server made the consumer.
	created time.Time
	gen     uint64 // counts the deletes of the subscription by this store
	// Deliveries up to stream sequence checkTo read their record
	// (watchRestart): reconnects is the connection's count when it was
	// set, checkSince whether it was.
	checkTo    uint64
	reconnects uint64
	checkSince bool

	f fetcher // its Dequeues' shared fetching (dequeue.go)
}

// label names the subscription in errors.
func (s *subState) label() string { return backend.Label(s.st.name, s.name) }

// fail is the error of a request to the server that failed with err: the
// caller's ctx error when ctx ended, pubsub.ErrClosed when the store was
// closed, else err, with what was being done. A timeout counts toward
// the store's watch of its connection (requestFailed).
func (ps *store) fail(ctx context.Context, doing string, err error) error {
	ps.requestFailed(err)
	switch {
	case ps.ctx.Err() != nil:
		return fmt.Errorf("%s: %w", doing, pubsub.ErrClosed)
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", doing, ctx.Err())
	}
	return fmt.Errorf("%s: %w", doing, err)
}
