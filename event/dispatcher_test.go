package event_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// receive dequeues n events from topic, decoded, acking them.
func receive(t *testing.T, ctx context.Context, tp pubsub.Topic, n int) []event.Envelope {
	t.Helper()
	var out []event.Envelope
	for range n {
		dctx, cancel := context.WithTimeout(ctx, patience)
		m, err := tp.Dequeue(dctx)
		cancel()
		if err != nil {
			t.Fatalf("Dequeue after %d of %d: %v", len(out), n, err)
		}
		env, err := event.Decode(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

func TestDispatcherInjected(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		var h struct {
			Orders event.Dispatcher `inject:"orders"`
			Again  event.Dispatcher `inject:"orders"`
		}
		if err := di.Fill(ctx, &h); err != nil {
			t.Fatal(err)
		}
		if h.Orders == nil || h.Orders != h.Again {
			t.Fatal("fields tagged with one topic should get the same Dispatcher")
		}
		if err := h.Orders.Dispatch(ctx, OrderPlaced{ID: 3}); err != nil {
			t.Fatal(err)
		}
		if err := h.Orders.DispatchBatch(ctx, OrderPlaced{ID: 4}, &OrderShipped{ID: 4}); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(300 * time.Millisecond)
		if err := h.Orders.DispatchAt(ctx, OrderPlaced{ID: 5}, at); err != nil {
			t.Fatal(err)
		}
		got := receive(t, ctx, topicOf(t, ctx, "orders"), 4)
		if time.Now().Before(at.Add(-50 * time.Millisecond)) {
			t.Errorf("the delayed event came %v early", time.Until(at))
		}
		var types []string
		ids := map[string]bool{}
		for _, env := range got {
			types = append(types, string(env.Type)+":"+string(env.Data))
			ids[env.ID] = true
		}
		want := `com.example.order.placed:{"id":3} com.example.order.placed:{"id":4} com.example.order.shipped:{"id":4,"parcels":null} com.example.order.placed:{"id":5}`
		if strings.Join(types, " ") != want {
			t.Errorf("received %v\nwant %s", types, want)
		}
		if len(ids) != 4 {
			t.Errorf("%d distinct ids for 4 events", len(ids))
		}
	})
}

func TestDispatcherErrors(t *testing.T) {
	ctx := newApp(t, backends[0], backendOptions{})
	d := dispatcher(t, ctx, "orders")
	if err := d.Dispatch(ctx, badEvent{}); !errors.Is(err, event.ErrInvalidEvent) {
		t.Errorf("Dispatch of an invalid event: %v", err)
	}
	if err := d.DispatchBatch(ctx, OrderPlaced{}, badEvent{}); !errors.Is(err, event.ErrInvalidEvent) || !strings.Contains(err.Error(), "item 1 of 2") {
		t.Errorf("DispatchBatch with an invalid event: %v", err)
	}
	if st, _ := admin.TopicStats(ctx, topicOf(t, ctx, "orders")); st.Ready != 0 {
		t.Errorf("%d events enqueued by failed dispatches", st.Ready)
	}
	// A topic with only the seven methods of the contract.
	bare := event.NewDispatcher(struct{ pubsub.Topic }{topicOf(t, ctx, "orders")}, event.DispatcherOptions{})
	if _, err := bare.DispatchUnique(ctx, "k", OrderPlaced{}); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("DispatchUnique on a topic without unique enqueue: %v, want pubsub.ErrUnsupported", err)
	}
	var empty struct {
		D event.Dispatcher `inject:""`
	}
	if err := di.Fill(ctx, &empty); !errors.Is(err, pubsub.ErrInvalidTopic) || !strings.Contains(err.Error(), `inject:"orders"`) {
		t.Errorf("Fill of an untagged Dispatcher: %v", err)
	}
	if err := event.Register(ctx); !errors.Is(err, di.ErrAlreadyRegistered) {
		t.Errorf("second Register: %v", err)
	}
}

func TestDispatcherSource(t *testing.T) {
	ctx := di.NewContext(context.Background())
	t.Cleanup(func() { _ = di.Shutdown(ctx) })
	backends[0].register(t, ctx, backendOptions{})
	if err := pubsub.RegisterTopic(ctx); err != nil { // before event.Register: fine
		t.Fatal(err)
	}
	if err := event.RegisterWithOptions(ctx, event.DispatcherOptions{Source: "/shop"}); err != nil {
		t.Fatal(err)
	}
	d := dispatcher(t, ctx, "orders")
	_ = d.Dispatch(ctx, OrderPlaced{})
	_ = d.Dispatch(ctx, OrderPlaced{}, event.WithSource("/override"))
	got := receive(t, ctx, topicOf(t, ctx, "orders"), 2)
	if got[0].Source != "/shop" || got[1].Source != "/override" {
		t.Errorf("sources %q, %q", got[0].Source, got[1].Source)
	}

	// A source that is no URI-reference fails every event, unless an
	// option replaces it.
	bad := event.NewDispatcher(topicOf(t, ctx, "orders"), event.DispatcherOptions{Source: "not a uri"})
	if err := bad.Dispatch(ctx, OrderPlaced{}); !errors.Is(err, event.ErrInvalidEvent) || !strings.Contains(err.Error(), "not a uri") {
		t.Errorf("Dispatch with source %q = %v, want ErrInvalidEvent naming it", "not a uri", err)
	}
	if err := bad.Dispatch(ctx, OrderPlaced{}, event.WithSource("/fixed")); err != nil {
		t.Errorf("Dispatch with WithSource over a bad source: %v", err)
	}
	if got := receive(t, ctx, topicOf(t, ctx, "orders"), 1); got[0].Source != "/fixed" {
		t.Errorf("source %q, want /fixed", got[0].Source)
	}
}

// TestRolledBackTransaction dispatches events in the caller's own
// transaction, through an injected Dispatcher with dbpubsub.WithTx and by
// hand with event.Encode and Enqueue in dbpubsub.WithTx: a rolled-back one is never
// delivered.
func TestRolledBackTransaction(t *testing.T) {
	for _, b := range backends {
		if !b.durable {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			ctx := newApp(t, b, backendOptions{})
			db := di.MustResolve[*bun.DB](ctx)
			tp := topicOf(t, ctx, "orders")
			d := dispatcher(t, ctx, "orders")
			seen := make(chan int, 10)
			svc, _ := newService(t, "orders", event.ServiceOptions{})
			_ = event.ListenFunc(svc, func(_ context.Context, e OrderPlaced) error {
				seen <- e.ID
				return nil
			})
			start(t, ctx, svc)

			inTx := func(id int, commit, byHand bool) {
				t.Helper()
				errRollback := errors.New("roll back")
				err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil { // the caller's own writes
						return err
					}
					if byHand {
						data, err := event.Encode(OrderPlaced{ID: id})
						if err != nil {
							return err
						}
						if err := tp.Enqueue(dbpubsub.WithTx(ctx, tx), data); err != nil {
							return err
						}
					} else if err := d.Dispatch(dbpubsub.WithTx(ctx, tx), OrderPlaced{ID: id}); err != nil {
						return err
					}
					if !commit {
						return errRollback
					}
					return nil
				})
				if commit && err != nil || !commit && !errors.Is(err, errRollback) {
					t.Fatalf("RunInTx: %v", err)
				}
			}
			inTx(1, false, false)
			inTx(2, false, true)
			inTx(3, true, false)
			inTx(4, true, true)
			got := map[int]bool{}
			for range 2 {
				select {
				case id := <-seen:
					got[id] = true
				case <-time.After(patience):
					t.Fatalf("got %v; the committed events 3 and 4 were not both delivered", got)
				}
			}
			if !got[3] || !got[4] {
				t.Fatalf("got %v, want the committed events 3 and 4", got)
			}
			select {
			case id := <-seen:
				t.Fatalf("event %d delivered; the rolled-back event must never be", id)
			case <-time.After(300 * time.Millisecond):
			}
			if st, err := admin.TopicStats(ctx, tp); err != nil || st.Ready+st.Scheduled+st.Processing+st.Dead != 0 {
				t.Errorf("stats %+v (%v): the rolled-back event exists", st, err)
			}
		})
	}
}
