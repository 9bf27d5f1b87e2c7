package pubsub_test

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Checkout is a handler whose topic is injected by its tag.
type Checkout struct {
	Orders pubsub.Topic `inject:"orders"`
}

// Example_tour is the README's tour: register a backend, make topics
// injectable, fill a struct, enqueue, dequeue, ack.
func Example_tour() {
	ctx := di.NewContext(context.Background())
	defer di.Shutdown(ctx)

	// The one line that picks the backend; dbpubsub.Register(ctx) makes
	// the same app durable and shared by every process on the database.
	if err := channelpubsub.Register(ctx); err != nil {
		panic(err)
	}
	if err := pubsub.RegisterTopic(ctx); err != nil {
		panic(err)
	}

	var c Checkout
	if err := di.Fill(ctx, &c); err != nil {
		panic(err)
	}
	if err := c.Orders.Enqueue(ctx, []byte("order #1")); err != nil {
		panic(err)
	}

	msg, err := c.Orders.Dequeue(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (attempt %d)\n", msg.Data(), pubsub.Attempt(msg))
	if err := msg.Ack(ctx); err != nil {
		panic(err)
	}
	// Output: order #1 (attempt 1)
}

// ExampleFail shows a failed message coming back, and ending dead once its
// attempts are spent.
func ExampleFail() {
	ps, _ := channelpubsub.NewWithOptions(channelpubsub.Options{
		Retry: pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: 1, Jitter: -1},
	})
	defer ps.Close()
	ctx := context.Background()
	t := ps.Topic("jobs")
	_ = t.Enqueue(ctx, []byte("flaky"))

	for range 2 {
		msg, _ := t.Dequeue(ctx)
		fmt.Println("attempt", pubsub.Attempt(msg))
		_ = pubsub.Fail(ctx, msg, fmt.Errorf("upstream down"))
	}
	dead, _ := admin.ListDead(ctx, t, 10)
	fmt.Printf("dead: %s after %d attempts: %s\n", dead[0].Data, dead[0].Attempts, dead[0].LastError)
	// Output:
	// attempt 1
	// attempt 2
	// dead: flaky after 2 attempts: upstream down
}
