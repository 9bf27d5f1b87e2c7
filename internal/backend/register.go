package backend

import (
	"context"
	"errors"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Register registers, as the pubsub.PubSub of the injector in ctx, the
// PubSub that build makes on first use, wrapped by the injector's Wrappers;
// di.Shutdown closes it. valid is
// the outcome of checking the options now, so that a bad option is
// reported at registration.
func Register[P pubsub.PubSub](ctx context.Context, valid error, build func(ctx context.Context) (P, error)) error {
	if valid != nil {
		return valid
	}
	return di.RegisterLazySingleton(ctx, func(ctx context.Context) (pubsub.PubSub, error) {
		ps, err := build(ctx)
		if err != nil {
			return nil, err
		}
		return applyWrappers(ctx, ps), nil
	})
}

// Wrappers are the wrappers (tracing, metrics) that the PubSub registered
// in an injector gets when it is built: RegisterWrapper adds one.
type Wrappers struct {
	list []func(pubsub.PubSub) pubsub.PubSub
}

// RegisterWrapper makes the PubSub registered in the injector in ctx (by
// Register, before or after this call) wrapped by wrap when it is first
// resolved; wrappers added later wrap those added earlier. It must be
// called before the PubSub is first resolved.
func RegisterWrapper(ctx context.Context, wrap func(pubsub.PubSub) pubsub.PubSub) error {
	ws, err := di.Resolve[*Wrappers](ctx)
	if errors.Is(err, di.ErrNotFound) {
		ws = &Wrappers{}
		err = di.RegisterBorrowed(ctx, ws)
	}
	if err != nil {
		return err
	}
	ws.list = append(ws.list, wrap)
	return nil
}

// applyWrappers applies the injector's Wrappers to ps.
func applyWrappers(ctx context.Context, ps pubsub.PubSub) pubsub.PubSub {
	ws, err := di.Resolve[*Wrappers](ctx)
	if err != nil {
		return ps
	}
	for _, w := range ws.list {
		ps = w(ps)
	}
	return ps
}
