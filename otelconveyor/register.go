package otelconveyor

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Register makes the PubSub registered in the injector in ctx (by
// channelpubsub.Register, dbpubsub.Register or natspubsub.Register, before
// or after it) traced and measured by t (see Wrap): the topics injected by
// name, the event Dispatchers and the event Services then are too. Call it
// before the PubSub is first resolved (di.Fill, Service.Start). Add
// t.Middleware() to the Services' middleware for their events'
// attributes.
//
// A backend built on the engine (channelpubsub, natspubsub) gets t as
// its engine's Observer (engine.RegisterObserver): the engine's hook
// points make the spans and counts, and nothing wraps it. Another
// backend, or every backend when the injector has an Observer already,
// is wrapped (Wrap).
func (t *Telemetry) Register(ctx context.Context) error {
	err := engine.RegisterObserver(ctx, t.observe)
	if err != nil && !errors.Is(err, engine.ErrObserverRegistered) {
		return fmt.Errorf("otelconveyor: Register: %w", err)
	}
	observes := err == nil
	if err := backend.RegisterWrapper(ctx, func(ps pubsub.PubSub) pubsub.PubSub {
		if o, ok := ps.(interface{ Observed() bool }); observes && ok && o.Observed() {
			return ps // t observes its engine
		}
		return t.Wrap(ps)
	}); err != nil {
		return fmt.Errorf("otelconveyor: Register: %w", err)
	}
	return nil
}
