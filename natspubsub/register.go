package natspubsub

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Register registers a PubSub with the default Options as the
// pubsub.PubSub of the injector in ctx, built on first use from the
// *nats.Conn the app registered (di.RegisterBorrowed(ctx, nc) when the app
// closes it, di.RegisterSingleton when di.Shutdown should), and closed by
// di.Shutdown. It is the one-line swap for channelpubsub.Register and
// dbpubsub.Register.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, Options{})
}

// RegisterWithOptions is Register with opts. A bad option is reported now.
func RegisterWithOptions(ctx context.Context, opts Options) error {
	_, err := opts.resolve(0)
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		nc, err := di.Resolve[*nats.Conn](ctx)
		if err != nil {
			return nil, fmt.Errorf("natspubsub: the PubSub needs the app's *nats.Conn in the injector (di.RegisterBorrowed(ctx, nc) or di.RegisterSingleton(ctx, nc)): %w", err)
		}
		return newPubSub(nc, false, opts, engine.RegisteredObserver(ctx))
	})
}
