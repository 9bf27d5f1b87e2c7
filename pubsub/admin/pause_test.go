package admin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// pausable is a backend topic with the Pauser ability.
type pausable struct {
	pubsub.Topic
	paused bool
}

func (p *pausable) Pause(context.Context) error          { p.paused = true; return nil }
func (p *pausable) Resume(context.Context) error         { p.paused = false; return nil }
func (p *pausable) Paused(context.Context) (bool, error) { return p.paused, nil }

func TestPauseThroughWrappers(t *testing.T) {
	ctx := context.Background()
	inner := &pausable{}
	tp := wrapTopic{wrapTopic{inner}}
	if err := admin.Pause(ctx, tp); err != nil || !inner.paused {
		t.Fatalf("Pause through two wrappers = %v, backend paused %v; want nil, true", err, inner.paused)
	}
	if p, err := admin.IsPaused(ctx, tp); err != nil || !p {
		t.Fatalf("IsPaused = %v, %v; want true, nil", p, err)
	}
	if err := admin.Resume(ctx, tp); err != nil || inner.paused {
		t.Fatalf("Resume = %v, backend paused %v; want nil, false", err, inner.paused)
	}
	plain := wrapTopic{baseTopic{}}
	for what, err := range map[string]error{
		"Pause":  admin.Pause(ctx, plain),
		"Resume": admin.Resume(ctx, plain),
		"IsPaused": func() error {
			_, err := admin.IsPaused(ctx, plain)
			return err
		}(),
	} {
		if !errors.Is(err, pubsub.ErrUnsupported) {
			t.Errorf("%s of a backend without Pauser = %v, want pubsub.ErrUnsupported", what, err)
		}
	}
}
