package channelpubsub_test

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Example_subscriptions fans one topic out to two subscriptions: each gets
// its own copy of every message published after it was created.
func Example_subscriptions() {
	ctx := context.Background()
	ps := channelpubsub.New()
	defer ps.Close()

	billing, err := pubsub.Subscribe(ctx, ps, "orders", "billing")
	if err != nil {
		panic(err)
	}
	shipping, err := pubsub.Subscribe(ctx, ps, "orders", "shipping")
	if err != nil {
		panic(err)
	}
	if err := ps.Topic("orders").Enqueue(ctx, []byte("order #1")); err != nil {
		panic(err)
	}
	for _, sub := range []pubsub.Topic{billing, shipping} {
		msg, err := sub.Dequeue(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s\n", msg.Data())
		_ = msg.Ack(ctx)
	}
	subs, _ := admin.ListSubscriptions(ctx, ps, "orders")
	fmt.Println(subs)
	// Output:
	// order #1
	// order #1
	// [billing shipping]
}
