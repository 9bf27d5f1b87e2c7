package admin_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// ExampleRequeueAllDead lists a topic's dead letters and gives them
// another chance, as an operator does once the cause is fixed.
func ExampleRequeueAllDead() {
	ps, _ := channelpubsub.NewWithOptions(channelpubsub.Options{
		Retry: pubsub.RetryPolicy{MaxAttempts: 1},
	})
	defer ps.Close()
	ctx := context.Background()
	t := ps.Topic("invoices")
	_ = t.Enqueue(ctx, []byte("invoice #7"))
	m, _ := t.Dequeue(ctx)
	_ = pubsub.Fail(ctx, m, fmt.Errorf("printer offline"))

	dead, _ := admin.ListDead(ctx, t, 10)
	for _, d := range dead {
		fmt.Printf("dead: %s (%s)\n", d.Data, d.LastError)
	}
	n, _ := admin.RequeueAllDead(ctx, t)
	fmt.Println("requeued", n)
	m, _ = t.Dequeue(ctx)
	fmt.Printf("delivered again: %s, attempt %d\n", m.Data(), pubsub.Attempt(m))
	// Output:
	// dead: invoice #7 (printer offline)
	// requeued 1
	// delivered again: invoice #7, attempt 1
}

// ExamplePeek lists the messages waiting for a later time, without
// delivering them.
func ExamplePeek() {
	ps := channelpubsub.New()
	defer ps.Close()
	ctx := context.Background()
	t := ps.Topic("reminders")
	_ = pubsub.EnqueueDelayed(ctx, t, []byte("call back"), time.Hour)

	page, _ := admin.Peek(ctx, t, admin.PeekOptions{State: admin.StateScheduled})
	for _, m := range page.Messages {
		fmt.Printf("%s: %q\n", m.State, m.Preview)
	}
	// Output: scheduled: "call back"
}
