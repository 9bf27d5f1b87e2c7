package event_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// deliveries records which service handled which event, and how often.
type deliveries struct {
	mu  sync.Mutex
	got map[string]map[int]int // by service, then event ID
}

func (d *deliveries) listener(name string) func(context.Context, OrderPlaced) error {
	return func(_ context.Context, e OrderPlaced) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.got == nil {
			d.got = map[string]map[int]int{}
		}
		if d.got[name] == nil {
			d.got[name] = map[int]int{}
		}
		d.got[name][e.ID]++
		return nil
	}
}

// distinct is how many distinct events name handled.
func (d *deliveries) distinct(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got[name])
}

// check fails t unless each of names handled every one of the n events
// exactly once.
func (d *deliveries) check(t *testing.T, n int, names ...string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range names {
		got := d.got[name]
		for id := range n {
			if got[id] != 1 {
				t.Errorf("%s handled event %d %d times, want once", name, id, got[id])
			}
		}
		if len(got) != n {
			t.Errorf("%s handled %d distinct events, want %d", name, len(got), n)
		}
	}
}

func dispatchN(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	events := make([]event.Event, n)
	for i := range events {
		events[i] = OrderPlaced{ID: i}
	}
	if err := dispatcher(t, ctx, "orders").DispatchBatch(ctx, events...); err != nil {
		t.Fatal(err)
	}
}

// TestSubscriptionsFanOut runs Services on three subscriptions of one
// topic, the default one among them, in one injector: each gets every
// event once.
func TestSubscriptionsFanOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		var d deliveries
		subs := []string{"", "billing", "analytics"}
		for _, sub := range subs {
			svc, _ := newService(t, "orders", event.ServiceOptions{Workers: 3, Subscription: sub})
			_ = event.ListenFunc(svc, d.listener(sub))
			_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
				m, _ := event.Meta(ctx)
				want := sub
				if want == "" {
					want = pubsub.DefaultSubscription
				}
				if m.Subscription != want || svc.Subscription() != want {
					return event.Permanent(fmt.Errorf("metadata says subscription %q, the service %q, want %q", m.Subscription, svc.Subscription(), want))
				}
				return nil
			})
			start(t, ctx, svc)
		}
		const n = 20
		dispatchN(t, ctx, n)
		eventually(t, "every service handled every event", func() bool {
			for _, sub := range subs {
				if d.distinct(sub) < n {
					return false
				}
			}
			return true
		})
		time.Sleep(100 * time.Millisecond) // a duplicate would show now
		d.check(t, n, subs...)
		for _, sub := range []string{pubsub.DefaultSubscription, "billing", "analytics"} {
			waitSettled(t, ctx, "orders", sub)
		}
	})
}

// waitSettled waits until the subscription keeps no message: all were
// acked, none is dead. Call it once the messages are known to have been
// handed to a listener: in memory, one being dequeued is counted nowhere
// for an instant.
func waitSettled(t *testing.T, ctx context.Context, topic, sub string) {
	t.Helper()
	ps := di.MustResolve[pubsub.PubSub](ctx)
	tp, err := pubsub.Subscribe(ctx, ps, topic, sub)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var st admin.Stats
	eventually(t, "subscription "+sub+" settled", func() bool {
		st, err = admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatalf("stats of subscription %q: %v", sub, err)
		}
		return st.Ready+st.Scheduled+st.Processing+st.Dead == 0
	})
}

// TestSubscriptionSharedByProcesses runs the same Service in two
// processes on one database, with a Service on another subscription in the
// first: the two share the events of their subscription, each handled
// once, and the other subscription gets them all.
func TestSubscriptionSharedByProcesses(t *testing.T) {
	eachDurableBackend(t, func(t *testing.T, b backend) {
		ctx, join := newAppJoin(t, b, backendOptions{})
		other := join(t)
		var d deliveries
		for _, c := range []struct {
			ctx  context.Context
			sub  string
			name string
		}{{ctx, "billing", "billing"}, {other, "billing", "billing"}, {ctx, "analytics", "analytics"}} {
			svc, _ := newService(t, "orders", event.ServiceOptions{Workers: 2, Subscription: c.sub})
			_ = event.ListenFunc(svc, d.listener(c.name))
			start(t, c.ctx, svc)
		}
		const n = 40
		dispatchN(t, other, n)
		eventually(t, "every event handled on both subscriptions", func() bool {
			return d.distinct("billing") == n && d.distinct("analytics") == n
		})
		time.Sleep(100 * time.Millisecond) // a duplicate would show now
		d.check(t, n, "billing", "analytics")
	})
}

// TestDuplicateService starts a second Service on a topic and subscription
// that a Service of the injector consumes: it is refused. On another
// subscription it starts.
func TestDuplicateService(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		newSvc := func(sub string) *event.Service {
			svc, _ := newService(t, "orders", event.ServiceOptions{Subscription: sub})
			_ = event.ListenFunc(svc, func(context.Context, OrderPlaced) error { return nil })
			return svc
		}
		start(t, ctx, newSvc(""))
		start(t, ctx, newSvc("billing"))
		for _, c := range []struct{ sub, want string }{
			{"", `subscription "default"`},
			{pubsub.DefaultSubscription, `subscription "default"`}, // the same as ""
			{"billing", `subscription "billing"`},
		} {
			svc := newSvc(c.sub)
			err := svc.Start(ctx)
			if err == nil {
				_ = svc.Shutdown(ctx)
			}
			if !errors.Is(err, event.ErrDuplicateService) || !errors.Is(err, di.ErrAlreadyRegistered) || !strings.Contains(fmt.Sprint(err), c.want) {
				t.Errorf("a second service on subscription %q: %v; want ErrDuplicateService and di.ErrAlreadyRegistered, naming %s", c.sub, err, c.want)
			}
		}
		start(t, ctx, newSvc("analytics"))

		// A topic whose name spells another's subscription is another
		// topic: refused for its name in the injector, not as a duplicate.
		odd, _ := newService(t, "orders subscription billing", event.ServiceOptions{})
		_ = event.ListenFunc(odd, func(context.Context, OrderPlaced) error { return nil })
		err := odd.Start(ctx)
		if err == nil {
			_ = odd.Shutdown(ctx)
		}
		if errors.Is(err, event.ErrDuplicateService) || !errors.Is(err, di.ErrAlreadyRegistered) {
			t.Errorf("a service on topic %q: %v; want di.ErrAlreadyRegistered, not ErrDuplicateService", "orders subscription billing", err)
		}
	})
}

func TestInvalidSubscription(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, sub string }{
		{"LeadingSpace", " billing"},
		{"ControlCharacter", "bill\ning"},
		{"TooLong", strings.Repeat("s", pubsub.MaxTopicNameLen+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := event.NewService("orders", event.ServiceOptions{Subscription: c.sub})
			if !errors.Is(err, pubsub.ErrInvalidSubscription) || !strings.Contains(fmt.Sprint(err), "ServiceOptions.Subscription") ||
				!strings.Contains(fmt.Sprint(err), fmt.Sprintf("%q", c.sub)) {
				t.Errorf("NewService with subscription %q: %v; want pubsub.ErrInvalidSubscription naming the field and the name", c.sub, err)
			}
		})
	}
}
