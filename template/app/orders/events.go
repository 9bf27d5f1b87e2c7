package orders

import (
	"time"

	"github.com/conveyorgo/conveyor/event"
)

// Topic is the topic the shop's events travel on. Handlers get its
// dispatcher with the tag `inject:"orders"`.
const Topic = "orders"

// AnalyticsSubscription is the topic's subscription that the analytics
// service consumes (CountOrder, Snapshot): it gets every event of the
// topic too, apart from the fulfilment service on the default one.
const AnalyticsSubscription = "analytics"

// Event types: the names events have on the wire. Choose them once and
// keep them, whatever the Go types are called.
const (
	PlacedType    event.EventType = "com.example.shop.order.placed"
	ReportDueType event.EventType = "com.example.shop.report.due"
)

// Placed says that a customer placed an order. POST /orders dispatches it;
// Fulfil handles it, and CountOrder on the analytics subscription.
type Placed struct {
	OrderID string `json:"order_id"`
	Item    string `json:"item"`
	Qty     int    `json:"qty"`
}

// Type implements event.Event.
func (Placed) Type() event.EventType { return PlacedType }

// ReportDue is the periodic event: the scheduler dispatches one every
// CONVEYOR_REPORT_EVERY; Report handles it, and Snapshot on the analytics
// subscription.
type ReportDue struct {
	At time.Time `json:"at"`
}

// Type implements event.Event.
func (ReportDue) Type() event.EventType { return ReportDueType }
