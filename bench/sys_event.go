package main

import (
	"github.com/conveyorgo/conveyor/event"
)

// The event layer: typed events dispatched and handled, the systems of the
// events scenario (sys_event_*.go). Each is an Instance whose Enqueue
// dispatches the Order made from the Msg (newOrder) and whose consumers
// decode it and pass order.msg() to handle; each encodes the Order as its
// API does (conveyor: a CloudEvents JSON envelope; Watermill cqrs: a JSON
// payload, its name in the metadata).

// orderType is the Order's conveyor event type.
const orderType event.EventType = "com.example.bench.order.placed"

// eventsTopic is the topic the event systems dispatch on.
const eventsTopic = "events"

// Order is the event of the events scenario: a small struct, the same for
// every system.
type Order struct {
	ID       int64  `json:"id"`
	SentAt   int64  `json:"sent_at"` // UnixNano
	Customer string `json:"customer"`
	Amount   int    `json:"amount"` // cents
}

// Type names Order for conveyor's event package; Watermill's JSON
// marshaler names it from its Go type.
func (Order) Type() event.EventType { return orderType }

var customers = [...]string{"ann@example.com", "bob@example.com", "chloé@example.com", "dmitri@example.com"}

// newOrder is the event dispatched for m.
func newOrder(m Msg) Order {
	return Order{
		ID:       m.N,
		SentAt:   m.T,
		Customer: customers[uint64(m.N)%uint64(len(customers))],
		Amount:   int(uint64(m.N)%10_000) + 1,
	}
}

// msg is the Msg a handler passes on: m for newOrder(m); a zero Msg when
// the other fields did not survive the trip.
func (o Order) msg() Msg {
	m := Msg{N: o.ID, T: o.SentAt}
	if o != newOrder(m) {
		return Msg{}
	}
	return m
}

// eventSystem limits a system to the events scenario; the event systems
// embed it.
type eventSystem struct{}

func (eventSystem) Scenarios() []string { return []string{ScEvents} }
