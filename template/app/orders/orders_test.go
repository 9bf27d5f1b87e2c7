package orders_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"

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
