package admin

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Pauser is a pubsub.Topic whose subscription can be paused: while it is
// paused, no consumer of it, in any process, gets a message; enqueues still
// work, and the messages wait. It acts on the subscription the handle reads:
// PubSub.Topic(name) pauses the default subscription, a handle from
// pubsub.Subscribe its own; the topic's other subscriptions go on. On a
// durable backend the pause is kept in the store, so it survives restarts.
//
// A Dequeue call waiting when Pause returns keeps waiting (until Resume or
// its ctx ends); a backend that claims messages ahead for its consumers
// gives those back rather than hand them out. Another process of a shared
// backend holds from the moment it learns of the pause (dbpubsub: its
// notification, within milliseconds); a message it was handing out then
// may still be delivered. A delivery made before the pause is unaffected:
// it can be settled, and a message it gives back waits for Resume.
type Pauser interface {
	// Pause pauses the subscription; pausing a paused one does nothing.
	Pause(ctx context.Context) error
	// Resume resumes it and wakes its consumers; resuming one that is not
	// paused does nothing.
	Resume(ctx context.Context) error
	// Paused reports whether it is paused.
	Paused(ctx context.Context) (bool, error)
}

// Pause pauses the subscription t reads (see Pauser). Without a Pauser it
// returns pubsub.ErrUnsupported.
func Pause(ctx context.Context, t pubsub.Topic) error {
	p, ok := pubsub.As[Pauser](t)
	if !ok {
		return unsupported(t, "pause")
	}
	return p.Pause(ctx)
}

// Resume resumes the subscription t reads. Without a Pauser it returns
// pubsub.ErrUnsupported.
func Resume(ctx context.Context, t pubsub.Topic) error {
	p, ok := pubsub.As[Pauser](t)
	if !ok {
		return unsupported(t, "pause")
	}
	return p.Resume(ctx)
}

// IsPaused reports whether the subscription t reads is paused. Without a
// Pauser it returns pubsub.ErrUnsupported.
func IsPaused(ctx context.Context, t pubsub.Topic) (bool, error) {
	p, ok := pubsub.As[Pauser](t)
	if !ok {
		return false, unsupported(t, "pause")
	}
	return p.Paused(ctx)
}
