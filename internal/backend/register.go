package backend

import (
	"context"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Register registers, as the pubsub.PubSub of the injector in ctx, the
// PubSub that build makes on first use; di.Shutdown closes it. valid is
// the outcome of checking the options now, so that a bad option is
// reported at registration.
func Register[P pubsub.PubSub](ctx context.Context, valid error, build func(ctx context.Context) (P, error)) error {
	if valid != nil {
		return valid
	}
	return di.RegisterLazySingleton(ctx, func(ctx context.Context) (pubsub.PubSub, error) {
		return build(ctx)
	})
}
