package wrap

import (
	"context"

	"github.com/conveyorgo/conveyor/internal/headerctx"
	"github.com/conveyorgo/conveyor/pubsub"
)

// HeaderFrom returns the header pubsub.WithHeader put in ctx (nil if
// none), validated: whoever builds messages from an enqueue's ctx (the
// engine for every backend, the event package for its envelopes, after
// StartEnqueue) calls it and fails with its error, which wraps
// pubsub.ErrInvalidHeader. The caller must not modify it.
func HeaderFrom(ctx context.Context) (pubsub.Header, error) {
	h, checked := headerctx.From(ctx)
	if len(h) == 0 {
		return nil, nil
	}
	if !checked {
		if err := pubsub.ValidateHeader(h); err != nil {
			return nil, err
		}
	}
	return h, nil
}
