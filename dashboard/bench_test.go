package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dashboard"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// BenchmarkPages measures each dashboard page over HTTP, rendering
// included (issue 19: each within 100 ms), on a PostgreSQL message table
// holding 1,000,000 finished and 10,000 dead rows of the topic, beside
// 10,000 ready and 1,000 scheduled messages. It reports ms/op; it asserts
// no time:
//
//	go test -run '^$' -bench Pages -benchtime 100x ./dashboard/
func BenchmarkPages(b *testing.B) {
	const finished, dead, ready, scheduled = 1_000_000, 10_000, 10_000, 1_000
	ctx := context.Background()
	_, db := dbpubsubtest.NewStore(b)
	ps := dbpubsubtest.New(b, db, dbpubsub.Options{})
	tp := ps.Topic("orders")
	b.Cleanup(func() { _ = tp.Close() })
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, `{"order":%d,"note":"a message of about sixty bytes, give or take"}`, i)
	}
	for range ready / len(batch) {
		if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
			b.Fatal(err)
		}
	}
	dbpubsubtest.AddHistory(b, db, "orders", finished, dead, scheduled)

	d, err := dashboard.New(ps, dashboard.Options{SampleInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	// A page half-way through the dead messages: a deep one.
	deep := "/topics/orders/default/?state=dead&limit=500"
	for range 10 {
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(get(b, d, deep))
		if next == nil {
			b.Fatalf("%s has no next page", deep)
		}
		deep = html.UnescapeString(next[1])
	}
	deep = strings.Replace(deep, "limit=500", "limit=50", 1)
	pg, err := admin.Peek(ctx, tp, admin.PeekOptions{State: admin.StateDead, Limit: 1})
	if err != nil || len(pg.Messages) != 1 {
		b.Fatalf("Peek(dead) = %+v, %v", pg, err)
	}
	id := pg.Messages[0].ID
	for _, c := range []struct{ name, path string }{
		{"Topics", "/"},
		{"Ready", "/topics/orders/default/"},
		{"Scheduled", "/topics/orders/default/?state=scheduled"},
		{"Dead", "/topics/orders/default/?state=dead"},
		{"DeadDeep", deep},
		{"Message", "/topics/orders/default/messages/" + id},
		{"Confirm", "/topics/orders/default/confirm/requeue?id=" + id},
	} {
		b.Run(c.name, func(b *testing.B) {
			start := time.Now()
			for range b.N {
				get(b, d, c.path)
			}
			b.ReportMetric(float64(time.Since(start))/float64(time.Millisecond)/float64(b.N), "ms/op")
		})
	}
}

// get returns the body of GET path from h, failing b unless it is 200.
func get(b *testing.B, h http.Handler, path string) string {
	b.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s = %d:\n%s", path, rec.Code, rec.Body)
	}
	return rec.Body.String()
}
