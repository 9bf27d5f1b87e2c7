package pubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/di"
)

// RegisterTopic makes topics injectable by name: after it, a struct field
//
//	Queue pubsub.Topic `inject:"orders"`
//
// filled by di.Fill resolves to Topic("orders") of the PubSub registered in
// the injector (by channelpubsub.Register or dbpubsub.Register). Each name is
// opened once: every field tagged with the same name gets the same Topic,
// closed by di.Shutdown.
func RegisterTopic(ctx context.Context) error {
	return di.Register(ctx, func(ctx context.Context, name string) (Topic, error) {
		if name == "" {
			return nil, fmt.Errorf("%w: a pubsub.Topic field needs the topic's name in its tag, as in inject:\"orders\"", ErrInvalidTopic)
		}
		ps, err := di.Resolve[PubSub](ctx)
		if errors.Is(err, di.ErrNotFound) {
			return nil, fmt.Errorf("%w for topic %q: call channelpubsub.Register(ctx), dbpubsub.Register(ctx) or natspubsub.Register(ctx) first", ErrNoBackend, name)
		}
		if err != nil {
			return nil, fmt.Errorf("pubsub: topic %q: %w", name, err)
		}
		return OpenTopic(ps, name)
	})
}

// What a di.ErrNotFound for a Topic or a PubSub says to do.
func init() {
	di.Hint[Topic]("call a backend's Register(ctx) (channelpubsub, dbpubsub or natspubsub) and pubsub.RegisterTopic(ctx) on the injector first")
	di.Hint[PubSub]("call channelpubsub.Register(ctx), dbpubsub.Register(ctx) or natspubsub.Register(ctx) on the injector first")
}
