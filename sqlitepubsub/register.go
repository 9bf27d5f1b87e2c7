package sqlitepubsub

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
// *bun.DB the app registered (OpenDB's; di.RegisterBorrowed or
// di.RegisterSingleton), and closed by di.Shutdown before that DB. It is
// the embedded twin of channelpubsub.Register and dbpubsub.Register.
func Register(ctx context.Context) error {
	return RegisterWithOptions(ctx, Options{})
}

// RegisterWithOptions is Register with opts. A bad option is reported now.
func RegisterWithOptions(ctx context.Context, opts Options) error {
	_, err := opts.withDefaults()
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		db, err := di.Resolve[*bun.DB](ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: the PubSub needs the app's SQLite *bun.DB in the injector (sqlitepubsub.OpenDB, then di.RegisterBorrowed or di.RegisterSingleton): %w", pkg, err)
		}
		return newObserved(db, opts, engine.RegisteredObserver(ctx))
	})
}

// RegisterFile registers a PubSub on the SQLite file at path (Open), which
// it opens on first use and closes with the PubSub at di.Shutdown: an app
// whose only use of the file is its messages needs nothing else.
func RegisterFile(ctx context.Context, path string, opts Options) error {
	_, err := opts.withDefaults()
	return backend.Register(ctx, err, func(ctx context.Context) (*PubSub, error) {
		o, err := opts.withDefaults()
		if err != nil {
			return nil, err
		}
		db, err := OpenDB(path, o.Synchronous)
		if err != nil {
			return nil, err
		}
		ps, err := newObserved(db, opts, engine.RegisteredObserver(ctx))
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		ps.owned = true
		return ps, nil
	})
}
