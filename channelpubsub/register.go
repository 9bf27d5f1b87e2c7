package channelpubsub

import (
	"context"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Register registers a PubSub with the default Options as the
// pubsub.PubSub of the injector in ctx. It is created on first use and
// closed by di.Shutdown. Swap it for dbpubsub.Register to make the app's
// messages durable.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, Options{})
}

// RegisterWithOptions is Register with opts; a bad option is reported when
// the PubSub is first resolved.
func RegisterWithOptions(ctx context.Context, opts Options) error {
	_, err := opts.withDefaults()
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		return newObserved(opts, engine.RegisteredObserver(ctx))
	})
}
