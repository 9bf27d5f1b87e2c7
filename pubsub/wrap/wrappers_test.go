package wrap_test

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// baseTopic is a backend topic without the abilities under test.
type baseTopic struct{ pubsub.Topic }

// wrapTopic is a plain wrapper: it has no ability of its own.
type wrapTopic struct{ inner pubsub.Topic }

func (w wrapTopic) Enqueue(ctx context.Context, d []byte) error         { return w.inner.Enqueue(ctx, d) }
func (w wrapTopic) Dequeue(ctx context.Context) (pubsub.Message, error) { return w.inner.Dequeue(ctx) }
func (w wrapTopic) Close() error                                        { return w.inner.Close() }
func (w wrapTopic) Unwrap() pubsub.Topic                                { return w.inner }
