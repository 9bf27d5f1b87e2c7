package dbpubsub

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Register registers a PubSub with the default Options as the
// pubsub.PubSub of the injector in ctx, built on first use from the
// *bun.DB the app registered, and closed by di.Shutdown before that DB. An
// app that keeps and closes the DB itself (or shares it with other
// injectors) registers it with di.RegisterBorrowed; with
// di.RegisterSingleton, di.Shutdown closes it too. It is the durable twin
// of channelpubsub.Register.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, Options{})
}

// RegisterWithOptions is Register with opts. A bad option is reported now.
func RegisterWithOptions(ctx context.Context, opts Options) error {
	_, err := opts.withDefaults()
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		db, err := di.Resolve[*bun.DB](ctx)
		if err != nil {
			return nil, fmt.Errorf("dbpubsub: the PubSub needs the app's *bun.DB in the injector (di.RegisterBorrowed(ctx, db) or di.RegisterSingleton(ctx, db)): %w", err)
		}
		return newObserved(db, opts, engine.RegisteredObserver(ctx))
	})
}
