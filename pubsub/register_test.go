package pubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
)

func TestRegisterTopicErrors(t *testing.T) {
	type untagged struct {
		Queue pubsub.Topic `inject:""`
	}
	type named struct {
		Queue pubsub.Topic `inject:"orders"`
	}
	cases := []struct {
		name     string
		backend  bool
		target   any
		want     error
		contains []string
	}{
		{"EmptyTag", true, &untagged{}, pubsub.ErrInvalidTopic, []string{"Queue", `inject:"orders"`}},
		{"NoBackend", false, &named{}, pubsub.ErrNoBackend, []string{"Queue", "channelpubsub.Register", "dbpubsub.Register"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := di.NewContext(context.Background())
			t.Cleanup(func() { _ = di.Shutdown(ctx) })
			if c.backend {
				if err := channelpubsub.Register(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := pubsub.RegisterTopic(ctx); err != nil {
				t.Fatal(err)
			}
			err := di.Fill(ctx, c.target)
			if !errors.Is(err, c.want) {
				t.Fatalf("Fill: %v, want %v", err, c.want)
			}
			for _, s := range c.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestRegisterTopicTwice(t *testing.T) {
	ctx := di.NewContext(context.Background())
	t.Cleanup(func() { _ = di.Shutdown(ctx) })
	if err := pubsub.RegisterTopic(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pubsub.RegisterTopic(ctx); !errors.Is(err, di.ErrAlreadyRegistered) {
		t.Fatalf("second RegisterTopic: %v, want di.ErrAlreadyRegistered", err)
	}
}

// Filling a Topic field before RegisterTopic says what to register.
func TestFillBeforeRegisterTopicSaysWhatToRegister(t *testing.T) {
	ctx := di.NewContext(context.Background())
	var h struct {
		Queue pubsub.Topic `inject:"orders"`
	}
	err := di.Fill(ctx, &h)
	if !errors.Is(err, di.ErrNotFound) || !strings.Contains(err.Error(), "pubsub.RegisterTopic(ctx)") {
		t.Fatalf("Fill before RegisterTopic: %v, want di.ErrNotFound saying to call pubsub.RegisterTopic", err)
	}
}
