package engine

import (
	"context"
	"errors"

	"github.com/conveyorgo/conveyor/di"
)

// ErrObserverRegistered is returned by RegisterObserver when the injector
// has an Observer already.
var ErrObserverRegistered = errors.New("engine: an observer is registered in the injector already")

// registered is the Observer registered in an injector.
type registered struct {
	observe func(*PubSub) Observer
}

// RegisterObserver makes observe the Options.Observe of the engine
// PubSub that a backend's Register builds in the injector in ctx, when it
// is first resolved (by then: call it before). One Observer per injector:
// a second call returns ErrObserverRegistered. otelconveyor's Register
// calls it.
func RegisterObserver(ctx context.Context, observe func(*PubSub) Observer) error {
	_, err := di.Resolve[*registered](ctx)
	switch {
	case err == nil:
		return ErrObserverRegistered
	case !errors.Is(err, di.ErrNotFound):
		return err
	}
	return di.RegisterBorrowed(ctx, &registered{observe: observe})
}

// RegisteredObserver returns the observe func registered in the injector
// in ctx (RegisterObserver), or nil. A backend's Register hands it to New
// as Options.Observe when it builds its PubSub.
func RegisteredObserver(ctx context.Context) func(*PubSub) Observer {
	r, err := di.Resolve[*registered](ctx)
	if err != nil {
		return nil
	}
	return r.observe
}
