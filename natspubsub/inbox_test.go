package natspubsub_test

import (
	"context"
	"testing"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

func claim(t *testing.T, tp pubsub.Topic, key string, want bool) func(context.Context) error {
	t.Helper()
	first, release, err := pubsub.Claim(context.Background(), tp, key)
	if err != nil || first != want {
		t.Fatalf("Claim(%q) = %v, %v; want %v, nil", key, first, err, want)
	}
	return release
}

// A release that comes after its claim was released and claimed anew
// leaves the newer claim alone.
func TestStaleReleaseKeepsNewerClaim(t *testing.T) {
	ctx := context.Background()
	tp := connect(t, natspubsub.Options{}).Topic("inbox")
	release := claim(t, tp, "k", true)
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	claim(t, tp, "k", true)
	if err := release(ctx); err != nil {
		t.Fatalf("second call of the first release: %v", err)
	}
	claim(t, tp, "k", false)
}

// Deleting a subscription forgets its claims, and only its own: a
// subscription of the same name made later starts with an empty inbox.
func TestDeleteSubscriptionForgetsClaims(t *testing.T) {
	ctx := context.Background()
	ps := connect(t, natspubsub.Options{})
	sub := func(name string) pubsub.Topic {
		t.Helper()
		tp, err := ps.Subscribe(ctx, "inbox-delete", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tp.Close() })
		return tp
	}
	gone, kept := sub("gone"), sub("kept")
	claim(t, gone, "k", true)
	claim(t, kept, "k", true)
	if err := ps.DeleteSubscription(ctx, "inbox-delete", "gone"); err != nil {
		t.Fatal(err)
	}
	claim(t, sub("gone"), "k", true)
	claim(t, kept, "k", false)
}
