package orders

import (
	"context"
	"log/slog"
)

// Fulfil handles Placed events. Its fields are filled from the injector
// when the event service starts, once.
type Fulfil struct {
	Sales *Sales       `inject:""`
	Log   *slog.Logger `inject:""`
}

// Handle fulfils the order. Returning an error would have the event
// retried after a backoff (event.Permanent(err): never retried).
func (f *Fulfil) Handle(ctx context.Context, e Placed) error {
	if !f.Sales.Record(e.OrderID, e.Item, e.Qty) {
		f.Log.InfoContext(ctx, "order already fulfilled", "order", e.OrderID)
		return nil
	}
	f.Log.InfoContext(ctx, "order fulfilled", "order", e.OrderID, "item", e.Item, "qty", e.Qty)
	return nil
}

// Report handles ReportDue events: it logs the sales so far.
type Report struct {
	Sales *Sales       `inject:""`
	Log   *slog.Logger `inject:""`
}

// Handle logs the report.
func (r *Report) Handle(ctx context.Context, e ReportDue) error {
	orders, units := r.Sales.Totals()
	r.Log.InfoContext(ctx, "sales report", "at", e.At.Format("15:04:05"), "orders", orders, "units", units)
	return nil
}
