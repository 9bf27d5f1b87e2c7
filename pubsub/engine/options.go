package engine

import (
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Options configures an engine. Name is required; the zero value of every
// other field means the default.
type Options struct {
	// Name is the backend's package name, which starts every error
	// ("channelpubsub").
	Name string
	// Retry decides when a failed delivery comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload accepted, in bytes. 0 means
	// pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// OnFailure hears of each failure nobody returns (see pubsub.Failure):
	// the messages made dead, and what the store reports. nil reports
	// nothing.
	OnFailure func(pubsub.Failure)
	// Named makes every handle name its topic and subscription (methods
	// Name and Subscription), which relay takes for its default Source.
	// Set it only for a store whose message IDs are unique in it across
	// processes and restarts: a relay's destination keeps one message per
	// source and ID.
	Named bool
	// Observer is where instrumentation attaches: it hears of each
	// enqueue, delivery and settle, with their contexts. The zero value
	// observes nothing.
	Observer Observer
	// Observe, when set, is called by New with the PubSub before New
	// returns it, and the Observer it returns is the engine's instead of
	// Observer: instrumentation that reads the PubSub (its topics' Stats)
	// attaches so. A backend's Register passes RegisteredObserver(ctx).
	Observe func(*PubSub) Observer
}

// Resolve returns o with its defaults applied, or an error naming the
// first field that makes no sense, as Name's Options.Field. A backend
// calls it to check its options before it makes its store.
func (o Options) Resolve() (Options, error) {
	shared, err := backend.Options{Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize}.Resolve(o.Name, 0, "")
	if err != nil {
		return o, err
	}
	o.Retry, o.Lease, o.MaxDataSize = shared.Retry, shared.Lease, shared.MaxDataSize
	return o, nil
}
