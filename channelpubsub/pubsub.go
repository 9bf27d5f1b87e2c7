package channelpubsub

import (
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// pkg starts every error of the package.
const pkg = "channelpubsub"

// PubSub is the in-process backend: conveyor's engine over the in-memory
// store. Create it with New or NewWithOptions; stop it with Close.
//
// Topic returns a handle on a topic: its enqueues publish to the topic,
// its Dequeue reads the default subscription. Handles on one name share
// its messages; closing a handle does not affect the others. Close stops
// the PubSub: every handle returns pubsub.ErrClosed from then on, blocked
// calls return, pending timers are stopped and the goroutines it started
// (a lease sweeper, and redeliveries waiting for room) have ended when
// Close returns. Messages still held are dropped with the process's
// memory. A second Close returns pubsub.ErrClosed.
type PubSub struct {
	*engine.PubSub
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
	_ admin.TopicLister = (*PubSub)(nil)
)

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
func NewWithOptions(opts Options) (*PubSub, error) { return newObserved(opts, nil) }

// newObserved is NewWithOptions with the engine's Options.Observe.
func newObserved(opts Options, observe func(*engine.PubSub) engine.Observer) (*PubSub, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	e, err := engine.New(newStore(o), engine.Options{
		Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, OnFailure: o.OnFailure, Observe: observe,
	})
	if err != nil {
		return nil, err
	}
	return &PubSub{e}, nil
}
