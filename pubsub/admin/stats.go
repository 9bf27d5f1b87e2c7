package admin

import (
	"context"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Stater is a pubsub.Topic that can count its messages; call it through
// TopicStats.
type Stater interface {
	Stats(ctx context.Context) (Stats, error)
}

// Stats counts a topic's messages by state.
type Stats struct {
	Ready      int64 // waiting and due now
	Scheduled  int64 // waiting for a later time (delayed or backing off)
	Processing int64 // leased to a consumer
	Dead       int64
	// OldestReady is how long the oldest ready message has waited (0 if
	// there is none, and always 0 on channelpubsub, which does not track
	// it: pubsubtest.Abilities.OldestReady).
	OldestReady time.Duration
}

// TopicStats counts t's messages by state.
func TopicStats(ctx context.Context, t pubsub.Topic) (Stats, error) {
	s, ok := pubsub.As[Stater](t)
	if !ok {
		return Stats{}, unsupported(t, "stats")
	}
	return s.Stats(ctx)
}
