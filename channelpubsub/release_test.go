package channelpubsub

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// TestReleaseUncountsTheAttempt: a delivery given back with Release (what
// the engine does with one made as its quiesce gate shut) is delivered
// again at once, with the same attempt number, and its old token no
// longer settles it.
func TestReleaseUncountsTheAttempt(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(o)
	if _, err := st.Open(driver.Env{Defaults: driver.SubscriptionConfig{Retry: pubsub.RetryPolicy{}.WithDefaults(), Lease: time.Minute}, Report: func(pubsub.Failure) {}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tp := st.Topic("release")
	if _, err := tp.Publish(ctx, nil, driver.Outgoing{Data: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	sub := tp.Subscription(pubsub.DefaultSubscription)
	var first, again driver.Delivery
	if err := sub.Receive(ctx, nil, &first); err != nil {
		t.Fatal(err)
	}
	if err := sub.(driver.Releaser).Release(ctx, &first); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := sub.Receive(ctx, nil, &again); err != nil {
		t.Fatal(err)
	}
	if again.Msg.ID() != first.Msg.ID() || again.Attempt != first.Attempt {
		t.Fatalf("after Release got message %s attempt %d, want %s attempt %d", again.Msg.ID(), again.Attempt, first.Msg.ID(), first.Attempt)
	}
	if err := sub.Ack(ctx, &first); err == nil {
		t.Fatal("Ack with the released delivery's token succeeded")
	}
	if err := sub.Ack(ctx, &again); err != nil {
		t.Fatal(err)
	}
}
