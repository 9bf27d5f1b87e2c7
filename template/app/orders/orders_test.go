package orders_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"

	"github.com/conveyorgo/conveyor/template/app/orders"
)

func TestEventTypes(t *testing.T) {
	t.Parallel()
	for _, e := range []event.Event{orders.Placed{}, orders.ReportDue{}} {
		if err := e.Type().Validate(); err != nil {
			t.Errorf("%T: %v", e, err)
		}
	}
}

func TestFulfilIsIdempotent(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	f := &orders.Fulfil{Sales: orders.NewSales(), Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	for _, e := range []orders.Placed{
		{OrderID: "1", Item: "book", Qty: 2},
		{OrderID: "2", Item: "pen", Qty: 1},
		{OrderID: "1", Item: "book", Qty: 2}, // delivered again
	} {
		if err := f.Handle(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	n, units := f.Sales.Totals()
	if n != 2 || units["book"] != 2 || units["pen"] != 1 {
		t.Errorf("totals: %d orders, %v; want 2 orders, book:2 pen:1", n, units)
	}
	if !strings.Contains(logs.String(), "order already fulfilled") {
		t.Errorf("the repeat was not logged:\n%s", logs.String())
	}

	logs.Reset()
	r := &orders.Report{Sales: f.Sales, Log: f.Log}
	if err := r.Handle(ctx, orders.ReportDue{At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "orders=2") {
		t.Errorf("report: %s", logs.String())
	}
}

// TestCountOrderOnce runs CountOrder in an event service beside a listener
// that fails the first delivery of each order: the order comes back, and
// is counted once.
func TestCountOrderOnce(t *testing.T) {
	t.Parallel()
	ctx := di.NewContext(context.Background())
	t.Cleanup(func() { _ = di.Shutdown(ctx) })
	tally := orders.NewTally()
	if err := errors.Join(
		di.RegisterSingleton(ctx, tally),
		channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{Retry: pubsub.RetryPolicy{MinBackoff: 5 * time.Millisecond}}),
		event.Register(ctx),
	); err != nil {
		t.Fatal(err)
	}
	svc, err := event.NewService(orders.Topic, event.ServiceOptions{
		Subscription: orders.AnalyticsSubscription,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var deliveries atomic.Int32
	if err := errors.Join(
		event.Listen(svc, &orders.CountOrder{}),
		event.ListenFunc(svc, func(ctx context.Context, e orders.Placed) error {
			if deliveries.Add(1) == 1 {
				return errors.New("a sibling listener fails once")
			}
			return nil
		}),
		svc.Start(ctx),
	); err != nil {
		t.Fatal(err)
	}
	d, err := di.ResolveNamed[event.Dispatcher](ctx, orders.Topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Dispatch(ctx, orders.Placed{OrderID: "1", Item: "book", Qty: 2}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); deliveries.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the order did not come back")
		}
	}
	if n, units := tally.Totals(); n != 1 || units != 2 {
		t.Errorf("tally: %d orders, %d units; want 1 order of 2 units", n, units)
	}
}
