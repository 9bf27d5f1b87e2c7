package natspubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// pkg starts every error of the package.
const pkg = "natspubsub"

// PubSub is the NATS JetStream backend: conveyor's engine over a store
// whose topics are streams and whose subscriptions are durable pull
// consumers on them, shared by every process that uses the same server and
// Options.Prefix. Make it with New or Connect; it is safe for concurrent
// use.
//
// Topic returns a handle on a topic: its enqueues publish to the topic,
// its Dequeue reads the default subscription. Besides pubsub.Topic a
// handle has the optional abilities pubsub.Delayer,
// pubsub.UniqueEnqueuer, pubsub.Inbox, admin.DeadLetters,
// admin.DeadDeleter and admin.Stater, and names its topic and
// subscription (Name, Subscription). Closing a handle leaves the topic's
// messages on the server.
//
// Close stops the PubSub: every handle and delivery returns
// pubsub.ErrClosed from then on and blocked calls return. Messages fetched
// but not handed to a consumer are given back; deliveries in hand come
// back when their lease runs out. A connection made by Connect is closed;
// one given to New is not. A second Close returns an error wrapping
// pubsub.ErrClosed.
type PubSub struct {
	*engine.PubSub
	s *store
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
	_ admin.TopicLister = (*PubSub)(nil)
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
	return newPubSub(nc, false, opts, nil)
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
	ps, err := newPubSub(nc, true, opts, nil)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return ps, nil
}

func newPubSub(nc *nats.Conn, owned bool, opts Options, observe func(*engine.PubSub) engine.Observer) (*PubSub, error) {
	o, err := opts.resolve(int(nc.MaxPayload()))
	if err != nil {
		return nil, err
	}
	// An asynchronous publish (Enqueue's, a batch's) whose acknowledgement
	// does not come within RequestTimeout is given up by nats.go too, so
	// that a server that went away leaves no pending publish behind.
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(o.RequestTimeout), jetstream.WithPublishAsyncTimeout(o.RequestTimeout))
	if err != nil {
		return nil, fmt.Errorf("natspubsub: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.RequestTimeout)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("natspubsub: the server at %s has no JetStream for this account (start nats-server with -js): %w", nc.ConnectedUrlRedacted(), err)
	}
	s := newStore(nc, owned, js, o)
	e, err := engine.New(s, engine.Options{
		Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, OnFailure: o.OnFailure, Named: true, Observe: observe,
	})
	if err != nil {
		return nil, err
	}
	return &PubSub{PubSub: e, s: s}, nil
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

// MaxDataSize is the largest payload Enqueue takes, in bytes
// (Options.MaxDataSize, or its default under the server's max_payload).
func (ps *PubSub) MaxDataSize() int { return ps.s.opts.MaxDataSize }
