package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// ackCounting is a backend topic with the AckCounter ability: it counts
// the acks at or after since among acked.
type ackCounting struct {
	pubsub.Topic
	acked []time.Time
}

func (c *ackCounting) AckedSince(_ context.Context, since time.Time) (int64, error) {
	var n int64
	for _, at := range c.acked {
		if !at.Before(since) {
			n++
		}
	}
	return n, nil
}

func TestAckedSinceThroughWrappers(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	tp := wrapTopic{wrapTopic{&ackCounting{acked: []time.Time{now.Add(-time.Minute), now, now}}}}
	if n, err := admin.AckedSince(ctx, tp, now.Add(-time.Second)); err != nil || n != 2 {
		t.Fatalf("AckedSince through two wrappers = %d, %v; want 2, nil", n, err)
	}
	if n, err := admin.AckedSince(ctx, wrapTopic{baseTopic{}}, now); !errors.Is(err, pubsub.ErrUnsupported) || n != 0 {
		t.Fatalf("AckedSince of a backend without AckCounter = %d, %v; want 0, pubsub.ErrUnsupported", n, err)
	}
}
