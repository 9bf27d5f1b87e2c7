package dbpubsub

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// storedHeaders returns, for each row of the queues of topic "group" (the
// default subscription's and any named one's), its headers column as
// text, "NULL" for NULL, by queue and data.
func (f *groupFixture) storedHeaders() map[string]string {
	f.t.Helper()
	rows, err := f.db.DB.QueryContext(f.ctx, `SELECT topic, data, headers::text FROM conveyor_events_all
		WHERE (topic = 'group' OR starts_with(topic, 'group' || chr(31))) AND data <> 'warm-up'`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var queue, data string
		var h sql.NullString
		if err := rows.Scan(&queue, &data, &h); err != nil {
			f.t.Fatal(err)
		}
		got[queue+" "+data] = h.String
		if !h.Valid {
			got[queue+" "+data] = "NULL"
		}
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return got
}

// routes are the topic's two kinds of route: its default subscription
// alone (the ready statements), and two named subscriptions (the fan-out
// statements); each returns the queues a publish writes to.
var routes = map[string]func(f *groupFixture) []string{
	"OwnRoute": func(*groupFixture) []string { return []string{"group"} },
	"FanOut": func(f *groupFixture) []string {
		for _, sub := range []string{"a", "b"} {
			if _, err := f.tp.pub.ps.Subscribe(f.ctx, "group", sub, driver.SubscriptionConfig{}); err != nil {
				f.t.Fatal(err)
			}
		}
		return []string{"group\x1fa", "group\x1fb"}
	},
}

// wantStored checks that each of queues keeps each row of want (data to
// the headers column as text, "NULL" for none).
func (f *groupFixture) wantStored(queues []string, want map[string]string) {
	f.t.Helper()
	w := map[string]string{}
	for _, q := range queues {
		for d, h := range want {
			w[q+" "+d] = h
		}
	}
	if got := f.storedHeaders(); !maps.Equal(got, w) {
		f.t.Errorf("stored headers %q, want %q", got, w)
	}
}

// The calls that one group statement writes keep each their own header, or
// none (NULL), whatever statement writes them: for now or later, on the
// default subscription's ready table or fanned out to subscriptions.
func TestEnqueueGroupKeepsEachHeader(t *testing.T) {
	for name, route := range routes {
		for _, delayed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delayed=%v", name, delayed), func(t *testing.T) {
				f := newGroupFixture(t)
				queues := route(f)
				with := func(n string) context.Context {
					return pubsub.WithHeader(f.ctx, pubsub.Header{"n": n})
				}
				calls := []groupCall{
					{"plain", func(ctx context.Context) error { return f.tp.Enqueue(ctx, []byte("plain")) }},
					{"one", func(context.Context) error { return f.tp.Enqueue(with("1"), []byte("one")) }},
					{"batch", func(context.Context) error {
						return f.tp.EnqueueBatch(with("b"), [][]byte{[]byte("b-0"), []byte("b-1")})
					}},
					{"plain batch", func(ctx context.Context) error {
						return f.tp.EnqueueBatch(ctx, [][]byte{[]byte("p-0"), []byte("p-1")})
					}},
				}
				want := map[string]string{"plain": "NULL", "one": `{"n": "1"}`, "b-0": `{"n": "b"}`, "b-1": `{"n": "b"}`,
					"p-0": "NULL", "p-1": "NULL"}
				if delayed {
					calls = append(calls, groupCall{"later", func(context.Context) error {
						return f.tp.EnqueueAt(with("later"), []byte("later"), time.Now().Add(time.Hour))
					}})
					want["later"] = `{"n": "later"}`
				}
				f.hold()
				wait := f.start(0, calls)
				f.release()
				for name, err := range wait() {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
				f.wantStored(queues, want)
			})
		}
	}
}

// Every enqueue in a caller's transaction writes its header with its rows,
// on either kind of route; a row without one keeps NULL.
func TestHeadersInTransaction(t *testing.T) {
	for name, route := range routes {
		t.Run(name, func(t *testing.T) {
			f := newGroupFixture(t)
			queues := route(f)
			want := map[string]string{}
			err := f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				ctx = WithTx(ctx, tx)
				for _, c := range []struct {
					suffix string
					ctx    context.Context
					stored string
				}{
					{"", ctx, "NULL"},
					{" with a header", pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme", "Tenant": "ACME"}), `{"Tenant": "ACME", "tenant": "acme"}`},
				} {
					d := func(s string) string { return s + c.suffix }
					if err := f.tp.Enqueue(c.ctx, []byte(d("now"))); err != nil {
						return err
					}
					if err := f.tp.EnqueueAt(c.ctx, []byte(d("past")), time.Now().Add(-time.Hour)); err != nil {
						return err
					}
					if err := f.tp.EnqueueAt(c.ctx, []byte(d("later")), time.Now().Add(time.Hour)); err != nil {
						return err
					}
					if err := f.tp.EnqueueBatch(c.ctx, [][]byte{[]byte(d("b-0")), []byte(d("b-1"))}); err != nil {
						return err
					}
					if ok, err := f.tp.EnqueueUnique(c.ctx, d("key"), []byte(d("unique"))); err != nil || !ok {
						return fmt.Errorf("EnqueueUnique = %v, %v", ok, err)
					}
					for _, s := range []string{"now", "past", "later", "b-0", "b-1", "unique"} {
						want[d(s)] = c.stored
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			f.wantStored(queues, want)
		})
	}
}
