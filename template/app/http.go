package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/template/app/orders"
)

// Handlers are the app's HTTP handlers. di.Fill fills the tagged fields of
// each of them (nested structs are filled too).
type Handlers struct {
	Index   IndexHandler
	Orders  OrdersHandler
	Stats   StatsHandler
	Health  HealthHandler
	Metrics http.Handler // the app's metrics, from its Telemetry
	// Dashboard is conveyor's dashboard, served at /conveyor/ (nil when
	// CONVEYOR_DASHBOARD=off).
	Dashboard http.Handler
}

// Routes returns the app's routes.
func (h *Handlers) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", &h.Index)
	mux.Handle("POST /orders", &h.Orders)
	mux.Handle("GET /stats", &h.Stats)
	mux.Handle("GET /healthz", &h.Health)
	if h.Metrics != nil {
		mux.Handle("GET /metrics", h.Metrics)
	}
	if h.Dashboard != nil {
		mux.Handle("/conveyor/", h.Dashboard)
	}
	return mux
}

// IndexHandler serves GET /: a page listing the endpoints, with a curl
// line to try. It is plain HTML: no script, style sheet or image from
// anywhere.
type IndexHandler struct{}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>A conveyor app</title></head>
<body>
<h1>A conveyor app</h1>
<p>A small shop: an order is an event, handled in the background by two services.</p>
<dl>
<dt><code>POST /orders</code></dt>
<dd>Places an order (a JSON object, <code>Content-Type: application/json</code>); answers 202 with its id.
<pre>curl -X POST http://{{.}}/orders -H 'Content-Type: application/json' -d '{"item":"book","qty":1}'</pre></dd>
<dt><a href="/stats"><code>GET /stats</code></a></dt>
<dd>The events handled and failed, by subscription and type, what analytics counted, and the depth of each queue.</dd>
<dt><a href="/healthz"><code>GET /healthz</code></a></dt>
<dd>200 when the backend answers, 503 when it does not.</dd>
<dt><a href="/metrics"><code>GET /metrics</code></a></dt>
<dd>The app's metrics in the Prometheus text format: messages sent, consumed, acked, retried and dead, handling times and queue depths, by topic and subscription.</dd>
<dt><a href="/conveyor/"><code>GET /conveyor/</code></a></dt>
<dd>conveyor's dashboard: each queue's depth and throughput, its messages, and the dead ones to re-queue or delete (CONVEYOR_DASHBOARD=read-only or off to restrict it).</dd>
</dl>
</body>
</html>
`))

func (IndexHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = indexPage.Execute(w, r.Host) // the client went away: nothing to do
}

// OrdersHandler serves POST /orders: it dispatches an orders.Placed event
// and answers 202 Accepted with the order's id.
type OrdersHandler struct {
	Orders event.Dispatcher `inject:"orders"` // dispatches on the topic orders.Topic
	Log    *slog.Logger     `inject:""`
}

// maxOrderBytes bounds the body of POST /orders.
const maxOrderBytes = 64 << 10

// orderRequest is the body of POST /orders.
type orderRequest struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

func (h *OrdersHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Only JSON: a browser sends a cross-site form or text/plain post
	// without asking, never an application/json one.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType,
			`want Content-Type: application/json (curl: -H 'Content-Type: application/json'), got `+quoteHeader(r.Header.Get("Content-Type")))
		return
	}
	var req orderRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOrderBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil {
		// Exactly one JSON value: anything after it but spaces is refused.
		if err = dec.Decode(&struct{}{}); err == io.EOF {
			err = nil
		} else if !errors.As(err, new(*http.MaxBytesError)) {
			err = errors.New("data after the JSON object")
		}
	}
	if tooLarge := new(*http.MaxBytesError); errors.As(err, tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", (*tooLarge).Limit))
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, `want one JSON object like {"item":"book","qty":1}: `+err.Error())
		return
	}
	switch {
	case req.Item == "" || len(req.Item) > 200:
		writeError(w, http.StatusBadRequest, `"item" must be 1 to 200 bytes long`)
		return
	case req.Qty < 1 || req.Qty > 1000:
		writeError(w, http.StatusBadRequest, `"qty" must be from 1 to 1000`)
		return
	}
	placed := orders.Placed{OrderID: event.NewID(), Item: req.Item, Qty: req.Qty}
	if err := h.Orders.Dispatch(r.Context(), placed, event.WithSubject(placed.OrderID)); err != nil {
		h.Log.ErrorContext(r.Context(), "order not queued", "error", err)
		writeError(w, http.StatusServiceUnavailable, "the order could not be queued; try again")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"order_id": placed.OrderID})
}

// StatsHandler serves GET /stats: the events handled and failed by
// subscription and type, what analytics counted, and the depth of each
// subscription's queue.
type StatsHandler struct {
	PubSub pubsub.PubSub `inject:""`
	Stats  *Stats        `inject:""`
	Tally  *orders.Tally `inject:""`
	Config Config        `inject:""`
}

// statsResponse is the body of GET /stats.
type statsResponse struct {
	Backend   Backend        `json:"backend"`
	Handled   Counts         `json:"handled"` // by subscription, then event type
	Failed    Counts         `json:"failed"`
	Analytics analyticsStats `json:"analytics"`
	Queue     queueStats     `json:"queue"`
}

type analyticsStats struct {
	Orders int `json:"orders"` // orders counted, each once
	Units  int `json:"units"`
}

type queueStats struct {
	Topic         string                     `json:"topic"`
	Subscriptions map[string]subscriptionRow `json:"subscriptions"` // by name
}

type subscriptionRow struct {
	Ready      int64 `json:"ready"`      // waiting, due now
	Scheduled  int64 `json:"scheduled"`  // waiting for later (delayed, or retrying after a failure)
	Processing int64 `json:"processing"` // being handled
	Dead       int64 `json:"dead"`       // failed for good, kept for inspection
}

func (h *StatsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	subs, err := subscriptionStats(ctx, h.PubSub, orders.Topic)
	if err != nil && !errors.Is(err, pubsub.ErrUnsupported) {
		writeError(w, http.StatusServiceUnavailable, "queue stats: "+err.Error())
		return
	}
	q := queueStats{Topic: orders.Topic, Subscriptions: map[string]subscriptionRow{}}
	for sub, s := range subs {
		q.Subscriptions[sub] = subscriptionRow{Ready: s.Ready, Scheduled: s.Scheduled, Processing: s.Processing, Dead: s.Dead}
	}
	handled, failed := h.Stats.Counts()
	n, units := h.Tally.Totals()
	writeJSON(w, http.StatusOK, statsResponse{
		Backend:   h.Config.Backend,
		Handled:   handled,
		Failed:    failed,
		Analytics: analyticsStats{Orders: n, Units: units},
		Queue:     q,
	})
}

// HealthHandler serves GET /healthz: 200 when the backend answers, 503
// when it does not. It asks for the topic's stats, or, from a backend
// without stats (Kafka), for the topic's subscriptions.
type HealthHandler struct {
	Queue  pubsub.Topic  `inject:"orders"`
	PubSub pubsub.PubSub `inject:""`
}

func (h *HealthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := admin.TopicStats(ctx, h.Queue)
	if errors.Is(err, pubsub.ErrUnsupported) {
		_, err = admin.ListSubscriptions(ctx, h.PubSub, orders.Topic)
	}
	if err != nil && !errors.Is(err, pubsub.ErrUnsupported) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// quoteHeader quotes a header's value for an error message; an absent
// header is "none".
func quoteHeader(v string) string {
	if v == "" {
		return "none"
	}
	return strconv.Quote(v)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
