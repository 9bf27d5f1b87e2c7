package kafkapubsub

import (
	"context"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Register registers a PubSub with the default Options (the brokers of
// $KAFKA_BROKERS) as the pubsub.PubSub of the injector in ctx, built on
// first use and closed by di.Shutdown. It is the one-line swap for
// channelpubsub.Register, dbpubsub.Register and natspubsub.Register.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, Options{})
}

// RegisterWithOptions is Register with opts. A bad option is reported now.
func RegisterWithOptions(ctx context.Context, opts Options) error {
	_, err := opts.resolve()
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		return newPubSub(opts, engine.RegisteredObserver(ctx))
	})
}
