package otelconveyor

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/internal/backend"
)

// Register makes the PubSub registered in the injector in ctx (by
// channelpubsub.Register, dbpubsub.Register or natspubsub.Register, before
// or after it) traced and measured by t (see Wrap): the topics injected by
// name, the event Dispatchers and the event Services then are too. Call it
// before the PubSub is first resolved (di.Fill, Service.Start). Add
// t.Middleware() to the Services' middleware for their events'
// attributes.
func (t *Telemetry) Register(ctx context.Context) error {
	if err := backend.RegisterWrapper(ctx, t.Wrap); err != nil {
		return fmt.Errorf("otelconveyor: Register: %w", err)
	}
	return nil
}
