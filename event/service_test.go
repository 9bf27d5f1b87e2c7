package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

func TestRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		type got struct {
			meta event.Metadata
			ok   bool
			v    any
		}
		gotc := make(chan got, 2)
		svc, _ := newService(t, "orders", event.ServiceOptions{Workers: 2})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			m, ok := event.Meta(ctx)
			gotc <- got{m, ok, e}
			return nil
		})
		_ = event.ListenFunc(svc, func(ctx context.Context, e *OrderShipped) error {
			m, ok := event.Meta(ctx)
			gotc <- got{m, ok, *e}
			return nil
		})
		start(t, ctx, svc)

		d := dispatcher(t, ctx, "orders")
		before := time.Now()
		if err := d.Dispatch(ctx, OrderPlaced{ID: 7, Email: "a@example.com"}, event.WithSubject("order-7")); err != nil {
			t.Fatal(err)
		}
		if err := d.Dispatch(ctx, &OrderShipped{ID: 7, Parcels: []string{"p1", "p2"}}); err != nil {
			t.Fatal(err)
		}
		want := map[event.EventType]any{
			OrderPlaced{}.Type():        OrderPlaced{ID: 7, Email: "a@example.com"},
			(*OrderShipped)(nil).Type(): OrderShipped{ID: 7, Parcels: []string{"p1", "p2"}},
		}
		ids := map[string]bool{}
		for range 2 {
			var g got
			select {
			case g = <-gotc:
			case <-time.After(patience):
				t.Fatal("no event handled")
			}
			if !g.ok {
				t.Fatal("event.Meta: no metadata in the listener's ctx")
			}
			if w := want[g.meta.Type]; fmt.Sprint(w) != fmt.Sprint(g.v) {
				t.Errorf("%s: got %+v, want %+v", g.meta.Type, g.v, w)
			}
			m := g.meta
			if len(m.ID) != 36 || ids[m.ID] {
				t.Errorf("event id %q: want a fresh UUID", m.ID)
			}
			ids[m.ID] = true
			if m.Topic != "orders" || m.Attempt != 1 || m.MessageID == "" || m.Source != event.DefaultSource {
				t.Errorf("metadata %+v: want topic orders, attempt 1, a message id, source %q", m, event.DefaultSource)
			}
			if m.Time.Before(before.Add(-time.Second)) || m.Time.After(time.Now()) {
				t.Errorf("event time %v, want about %v", m.Time, before)
			}
			if m.Type == (OrderPlaced{}).Type() && m.Subject != "order-7" {
				t.Errorf("subject %q, want order-7", m.Subject)
			}
		}
	})
}

func TestSeveralListeners(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		var mu sync.Mutex
		calls := map[int][]string{}
		record := func(name string) func(context.Context, OrderPlaced) error {
			return func(_ context.Context, e OrderPlaced) error {
				mu.Lock()
				defer mu.Unlock()
				calls[e.ID] = append(calls[e.ID], name)
				return nil
			}
		}
		svc, _ := newService(t, "orders", event.ServiceOptions{Workers: 4})
		for _, name := range []string{"a", "b", "c"} {
			if err := event.ListenFunc(svc, record(name)); err != nil {
				t.Fatal(err)
			}
		}
		start(t, ctx, svc)
		const n = 20
		events := make([]event.Event, n)
		for i := range events {
			events[i] = OrderPlaced{ID: i}
		}
		if err := dispatcher(t, ctx, "orders").DispatchBatch(ctx, events...); err != nil {
			t.Fatal(err)
		}
		eventually(t, "every listener called", func() bool {
			mu.Lock()
			defer mu.Unlock()
			done := 0
			for _, c := range calls {
				if len(c) == 3 {
					done++
				}
			}
			return done == n
		})
		time.Sleep(50 * time.Millisecond) // a duplicate call would show now
		mu.Lock()
		defer mu.Unlock()
		for id, c := range calls {
			if !slices.Equal(c, []string{"a", "b", "c"}) {
				t.Errorf("event %d: listeners called %v, want [a b c] once each, in order", id, c)
			}
		}
	})
}

func TestFailingListenerIsRetriedThenDead(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(3))
		var attempts []int
		var mu sync.Mutex
		svc, logs := newService(t, "orders", event.ServiceOptions{Workers: 2})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			m, _ := event.Meta(ctx)
			mu.Lock()
			attempts = append(attempts, m.Attempt)
			mu.Unlock()
			return errors.New("mail server down")
		})
		start(t, ctx, svc)
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		dead := waitDead(t, ctx, "orders", 1)
		if dead[0].Attempts != 3 || !strings.Contains(dead[0].LastError, "mail server down") {
			t.Errorf("dead message: %d attempts, reason %q; want 3 attempts and the listener's error", dead[0].Attempts, dead[0].LastError)
		}
		env, err := event.Decode(dead[0].Data)
		if err != nil || env.Type != (OrderPlaced{}).Type() {
			t.Errorf("the dead message's data is not the event: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Errorf("listener saw attempts %v, want [1 2 3]", attempts)
		}
		if !strings.Contains(logs.String(), "will be retried") {
			t.Errorf("no retry logged:\n%s", logs)
		}
	})
}

func TestPermanentIsDeadAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		var calls atomic.Int32
		var later atomic.Int32
		svc, _ := newService(t, "orders", event.ServiceOptions{})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			calls.Add(1)
			return event.Permanent(fmt.Errorf("order %d does not exist", e.ID))
		})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			later.Add(1) // never reached: the first listener failed
			return nil
		})
		start(t, ctx, svc)
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 404}); err != nil {
			t.Fatal(err)
		}
		dead := waitDead(t, ctx, "orders", 1)
		if dead[0].Attempts != 1 || !strings.Contains(dead[0].LastError, "order 404 does not exist") {
			t.Errorf("dead message: %d attempts, reason %q; want 1 attempt and the listener's error", dead[0].Attempts, dead[0].LastError)
		}
		if calls.Load() != 1 || later.Load() != 0 {
			t.Errorf("first listener called %d times, second %d; want 1 and 0", calls.Load(), later.Load())
		}
	})
}

func TestUnknownAndMalformedAreDead(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		handled := make(chan OrderPlaced, 1)
		svc, logs := newService(t, "orders", event.ServiceOptions{})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			handled <- e
			return nil
		})
		start(t, ctx, svc)
		tp := topicOf(t, ctx, "orders")
		cases := []struct {
			name, data, reason string
		}{
			{"NotJSON", "hello", "not a JSON CloudEvent"},
			{"NotCloudEvent", `{"specversion":"0.3","id":"1","source":"x","type":"t"}`, `specversion "0.3"`},
			{"UnknownType", string(rawEnvelope(t, "com.example.unknown", `{}`)), `no listener for event type: "com.example.unknown"`},
			{"DataDoesNotDecode", string(rawEnvelope(t, "com.example.order.placed", `{"id":"seven"}`)), "does not decode into event_test.OrderPlaced"},
		}
		for _, c := range cases {
			if err := tp.Enqueue(ctx, []byte(c.data)); err != nil {
				t.Fatal(err)
			}
		}
		// The service goes on with good events.
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-handled:
		case <-time.After(patience):
			t.Fatal("a good event after bad ones was not handled")
		}
		dead := waitDead(t, ctx, "orders", len(cases))
		for _, c := range cases {
			i := slices.IndexFunc(dead, func(d admin.DeadMessage) bool { return string(d.Data) == c.data })
			if i < 0 {
				t.Errorf("%s: not dead", c.name)
				continue
			}
			if d := dead[i]; d.Attempts != 1 || !strings.Contains(d.LastError, c.reason) {
				t.Errorf("%s: dead after %d attempts, reason %q; want 1 attempt, reason with %q", c.name, d.Attempts, d.LastError, c.reason)
			}
		}
		if !strings.Contains(logs.String(), "undecodable message") {
			t.Errorf("undecodable message not logged:\n%s", logs)
		}
	})
}

// With SkipUnknown, an event of a type without a listener is acked, not
// dead; a malformed message is dead all the same.
func TestSkipUnknown(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		handled := make(chan OrderPlaced, 1)
		svc, _ := newService(t, "orders", event.ServiceOptions{SkipUnknown: true})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			handled <- e
			return nil
		})
		start(t, ctx, svc)
		tp := topicOf(t, ctx, "orders")
		for _, data := range []string{string(rawEnvelope(t, "com.example.unknown", `{}`)), "hello"} {
			if err := tp.Enqueue(ctx, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-handled:
		case <-time.After(patience):
			t.Fatal("a good event after an unknown one was not handled")
		}
		dead := waitDead(t, ctx, "orders", 1)
		if len(dead) != 1 || string(dead[0].Data) != "hello" {
			t.Fatalf("dead %+v, want only the malformed message", dead)
		}
		deadline := time.Now().Add(patience)
		for {
			st, err := admin.TopicStats(ctx, tp)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready+st.Processing+st.Scheduled == 0 && st.Dead == 1 {
				break // the unknown type was acked
			}
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v, want the unknown type acked and one dead", st)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestPanicIsRecovered(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		var calls atomic.Int32
		ok := make(chan event.Metadata, 1)
		svc, logs := newService(t, "orders", event.ServiceOptions{})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			if calls.Add(1) == 1 {
				var m map[string]int
				m["boom"] = 1 // a nil map: panics
			}
			md, _ := event.Meta(ctx)
			ok <- md
			return nil
		})
		start(t, ctx, svc)
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case md := <-ok:
			if md.Attempt != 2 {
				t.Errorf("handled on attempt %d, want 2 (the panic counts as a failure)", md.Attempt)
			}
		case <-time.After(patience):
			t.Fatal("the event was not handled again after the panic")
		}
		eventually(t, "panic logged", func() bool { return strings.Contains(logs.String(), "listener panicked") })
		if l := logs.String(); !strings.Contains(l, "assignment to entry in nil map") || !strings.Contains(l, "TestPanicIsRecovered") {
			t.Errorf("the log lacks the panic's value or stack:\n%s", l)
		}
	})
}

// Mailer is a dependency injected into listeners.
type Mailer struct {
	mu   sync.Mutex
	sent []string
}

func (m *Mailer) Send(to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, to)
}

func (m *Mailer) Sent() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sent)
}

// SendConfirmation is a listener with injected fields.
type SendConfirmation struct {
	Mail     *Mailer          `inject:""`
	Audit    event.Dispatcher `inject:"audit"`
	Optional *strings.Builder `inject:",optional"`
}

func (h *SendConfirmation) Handle(ctx context.Context, e OrderPlaced) error {
	h.Mail.Send(e.Email)
	return h.Audit.Dispatch(ctx, Audited{What: fmt.Sprintf("mail to %s", e.Email)})
}

type Audited struct {
	What string `json:"what"`
}

func (Audited) Type() event.EventType { return "com.example.audited" }

func TestInjectedListener(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		mailer := &Mailer{}
		if err := di.RegisterSingleton(ctx, mailer); err != nil {
			t.Fatal(err)
		}
		h := &SendConfirmation{}
		svc, _ := newService(t, "orders", event.ServiceOptions{})
		if err := event.Listen(svc, h); err != nil {
			t.Fatal(err)
		}
		audits := make(chan Audited, 1)
		audit, _ := newService(t, "audit", event.ServiceOptions{})
		_ = event.ListenFunc(audit, func(_ context.Context, e Audited) error {
			audits <- e
			return nil
		})
		start(t, ctx, svc)
		start(t, ctx, audit)
		if h.Mail != mailer || h.Audit == nil || h.Optional != nil {
			t.Fatalf("fields after Start: %+v; want the Mailer, a Dispatcher, and no optional value", h)
		}
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1, Email: "ann@example.com"}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-audits:
			if a.What != "mail to ann@example.com" {
				t.Errorf("audit %q", a.What)
			}
		case <-time.After(patience):
			t.Fatal("no audit event")
		}
		if got := mailer.Sent(); !slices.Equal(got, []string{"ann@example.com"}) {
			t.Errorf("sent %v", got)
		}
	})
}

// TestDrainLosesNothing stops a busy service and counts every message:
// each was handled (acked) or is still in the topic, none is in flight.
func TestDrainLosesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(100))
		const n = 200
		var handled counter
		runCtx, stop := context.WithCancel(ctx)
		svc, _ := newService(t, "orders", event.ServiceOptions{Workers: 4, DrainTimeout: 20 * time.Millisecond})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			// Some listeners outlive the drain timeout and see their ctx
			// end; they fail and their event must come back.
			delay := time.Millisecond
			if e.ID%10 == 0 {
				delay = time.Second
			}
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
			m, _ := event.Meta(ctx)
			handled.add(m.ID)
			return nil
		})
		events := make([]event.Event, n)
		for i := range events {
			events[i] = OrderPlaced{ID: i}
		}
		if err := dispatcher(t, ctx, "orders").DispatchBatch(ctx, events...); err != nil {
			t.Fatal(err)
		}
		runErr := make(chan error, 1)
		go func() { runErr <- svc.Run(runCtx) }()
		eventually(t, "some events handled", func() bool { return handled.len() >= n/4 })
		stop()
		select {
		case err := <-runErr:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(patience):
			t.Fatal("Run did not return after its ctx ended")
		}
		if handled.len() == n {
			t.Fatal("every event was handled before the stop; the test proves nothing")
		}

		// Everything not handled is still in the topic.
		tp := topicOf(t, ctx, "orders")
		rest := map[string]bool{}
		for handled.len()+len(rest) < n {
			dctx, cancel := context.WithTimeout(ctx, patience)
			m, err := tp.Dequeue(dctx)
			cancel()
			if err != nil {
				t.Fatalf("Dequeue after %d handled and %d left, of %d: %v", handled.len(), len(rest), n, err)
			}
			env, err := event.Decode(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			if handled.get(env.ID) > 0 || rest[env.ID] {
				t.Fatalf("event %s delivered again after it was handled", env.ID)
			}
			rest[env.ID] = true
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st, err := admin.TopicStats(ctx, tp); err != nil || st.Ready+st.Scheduled+st.Processing+st.Dead != 0 {
			t.Errorf("stats %+v (%v): want an empty topic", st, err)
		}
	})
}

// TestShutdownDrains stops a running service through di.Shutdown: the
// event in hand finishes and is acked before the topic closes.
func TestShutdownDrains(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := di.NewContext(context.Background())
		b.register(t, ctx, backendOptions{})
		if err := event.Register(ctx); err != nil {
			t.Fatal(err)
		}
		inHand := make(chan struct{})
		release := make(chan struct{})
		var acked atomic.Bool
		svc, logs := newService(t, "orders", event.ServiceOptions{
			Middleware: []event.Middleware{event.Observe(func(_ context.Context, _ event.Metadata, _ time.Duration, err error) {
				acked.Store(err == nil)
			})},
		})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			close(inHand)
			<-release
			return nil
		})
		runErr := make(chan error, 1)
		go func() { runErr <- svc.Run(ctx) }()
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		<-inHand
		shut := make(chan error, 1)
		go func() { shut <- di.Shutdown(ctx) }()
		time.Sleep(50 * time.Millisecond)
		select {
		case err := <-shut:
			t.Fatalf("di.Shutdown returned (%v) while an event was in hand", err)
		default:
		}
		close(release)
		if err := <-shut; err != nil {
			t.Fatalf("di.Shutdown: %v", err)
		}
		if err := <-runErr; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !acked.Load() || strings.Contains(logs.String(), "settle failed") {
			t.Errorf("the event in hand was not acked before the topic closed:\n%s", logs)
		}
	})
}

func TestDrainTimeoutFailsTheEvent(t *testing.T) {
	ctx := newApp(t, backends[0], fastRetry(5))
	svc, logs := newService(t, "orders", event.ServiceOptions{DrainTimeout: 10 * time.Millisecond})
	inHand := make(chan struct{})
	_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
		close(inHand)
		<-ctx.Done()
		return ctx.Err()
	})
	runCtx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(runCtx) }()
	if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
		t.Fatal(err)
	}
	<-inHand
	stop()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	m, err := topicOf(t, ctx, "orders").Dequeue(dctx)
	if err != nil {
		t.Fatalf("the interrupted event did not come back: %v", err)
	}
	if pubsub.Attempt(m) != 2 {
		t.Errorf("attempt %d, want 2", pubsub.Attempt(m))
	}
	_ = m.Ack(ctx)
	if !strings.Contains(logs.String(), "drain timeout") {
		t.Errorf("drain timeout not logged:\n%s", logs)
	}
}

func TestHandlerTimeout(t *testing.T) {
	ctx := newApp(t, backends[0], fastRetry(1))
	svc, _ := newService(t, "orders", event.ServiceOptions{HandlerTimeout: 10 * time.Millisecond})
	_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
		<-ctx.Done()
		return ctx.Err()
	})
	start(t, ctx, svc)
	if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
		t.Fatal(err)
	}
	dead := waitDead(t, ctx, "orders", 1)
	if !strings.Contains(dead[0].LastError, "timed out after 10ms") {
		t.Errorf("reason %q, want a timeout", dead[0].LastError)
	}
}

func TestMiddlewareOrderAndObserve(t *testing.T) {
	ctx := newApp(t, backends[0], fastRetry(1))
	var mu sync.Mutex
	var trace []string
	mw := func(name string) event.Middleware {
		return func(next event.Handler) event.Handler {
			return func(ctx context.Context, d event.Delivery) error {
				mu.Lock()
				trace = append(trace, name+">")
				mu.Unlock()
				err := next(ctx, d)
				mu.Lock()
				trace = append(trace, "<"+name)
				mu.Unlock()
				return err
			}
		}
	}
	type obs struct {
		typ  event.EventType
		perm bool
	}
	observed := make(chan obs, 2)
	svc, _ := newService(t, "orders", event.ServiceOptions{Middleware: []event.Middleware{
		event.Observe(func(_ context.Context, m event.Metadata, _ time.Duration, err error) {
			observed <- obs{m.Type, event.IsPermanent(err)}
		}),
		mw("a"), mw("b"),
	}})
	_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
		mu.Lock()
		trace = append(trace, "listener")
		mu.Unlock()
		return nil
	})
	start(t, ctx, svc)
	if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if o := <-observed; o != (obs{OrderPlaced{}.Type(), false}) {
		t.Errorf("observed %+v", o)
	}
	if err := topicOf(t, ctx, "orders").Enqueue(ctx, rawEnvelope(t, "com.example.other", "{}")); err != nil {
		t.Fatal(err)
	}
	if o := <-observed; o != (obs{"com.example.other", true}) {
		t.Errorf("observed %+v, want the unknown type, permanent", o)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a>", "b>", "listener", "<b", "<a", "a>", "b>", "<b", "<a"}; !slices.Equal(trace, want) {
		t.Errorf("trace %v, want %v", trace, want)
	}
}

func TestStartErrors(t *testing.T) {
	type NoType struct{ OrderPlaced }
	cases := []struct {
		name  string
		setup func(t *testing.T, ctx context.Context, s *event.Service)
		noReg bool
		want  error
		text  string
	}{
		{name: "NoListener", want: event.ErrInvalidListener, text: "no listener"},
		{name: "NoRegister", noReg: true, want: di.ErrNotFound, text: "event.Register",
			setup: func(t *testing.T, _ context.Context, s *event.Service) {
				_ = event.ListenFunc(s, func(context.Context, OrderPlaced) error { return nil })
			}},
		{name: "InterfaceEvent", want: event.ErrInvalidListener, text: "interface",
			setup: func(t *testing.T, _ context.Context, s *event.Service) {
				if err := event.ListenFunc(s, func(context.Context, event.Event) error { return nil }); !errors.Is(err, event.ErrInvalidListener) {
					t.Errorf("ListenFunc: %v", err)
				}
			}},
		{name: "EmptyType", want: event.ErrInvalidEvent, text: "empty event type",
			setup: func(t *testing.T, _ context.Context, s *event.Service) {
				_ = event.ListenFunc(s, func(context.Context, badEvent) error { return nil })
			}},
		{name: "NilListener", want: event.ErrInvalidListener, text: "nil listener",
			setup: func(t *testing.T, _ context.Context, s *event.Service) {
				_ = event.Listen[OrderPlaced](s, (*SendConfirmation)(nil))
			}},
		{name: "MissingDependency", want: di.ErrNotFound, text: "SendConfirmation.Mail",
			setup: func(t *testing.T, _ context.Context, s *event.Service) {
				_ = event.Listen(s, &SendConfirmation{})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := di.NewContext(context.Background())
			t.Cleanup(func() { _ = di.Shutdown(ctx) })
			backends[0].register(t, ctx, backendOptions{})
			if !c.noReg {
				if err := event.Register(ctx); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := newService(t, "orders", event.ServiceOptions{})
			if c.setup != nil {
				c.setup(t, ctx, s)
			}
			err := s.Start(ctx)
			if err == nil {
				_ = s.Shutdown(ctx)
			}
			if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.text) {
				t.Fatalf("Start: %v; want %v mentioning %q", err, c.want, c.text)
			}
			if strings.Contains(fmt.Sprint(err), "event.registry") {
				t.Fatalf("Start: %v; names the package's internal type", err)
			}
		})
	}
}

type badEvent struct{}

func (badEvent) Type() event.EventType { return "" }

func TestStartTwice(t *testing.T) {
	ctx := newApp(t, backends[0], backendOptions{})
	s, _ := newService(t, "orders", event.ServiceOptions{})
	_ = event.ListenFunc(s, func(context.Context, OrderPlaced) error { return nil })
	start(t, ctx, s)
	if err := s.Start(ctx); !errors.Is(err, event.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	if err := event.ListenFunc(s, func(context.Context, OrderPlaced) error { return nil }); !errors.Is(err, event.ErrStarted) {
		t.Errorf("Listen after Start: %v, want ErrStarted", err)
	}
	other, _ := newService(t, "orders", event.ServiceOptions{})
	_ = event.ListenFunc(other, func(context.Context, OrderPlaced) error { return nil })
	if err := other.Start(ctx); !errors.Is(err, event.ErrDuplicateService) || !errors.Is(err, di.ErrAlreadyRegistered) {
		t.Errorf("a second service on the topic: %v, want ErrDuplicateService and di.ErrAlreadyRegistered", err)
	}
}

func TestTopicClosedStopsRun(t *testing.T) {
	ctx := di.NewContext(context.Background())
	t.Cleanup(func() { _ = di.Shutdown(ctx) }) // says the PubSub was closed already
	backends[0].register(t, ctx, backendOptions{})
	if err := event.Register(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, "orders", event.ServiceOptions{Workers: 3})
	_ = event.ListenFunc(s, func(context.Context, OrderPlaced) error { return nil })
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	eventually(t, "service started", func() bool {
		_, err := di.ResolveNamed[*event.Service](ctx, "orders")
		return err == nil
	})
	ps := di.MustResolve[pubsub.PubSub](ctx)
	_ = ps.(interface{ Close() error }).Close()
	select {
	case err := <-runErr:
		if !errors.Is(err, pubsub.ErrClosed) {
			t.Errorf("Run: %v, want pubsub.ErrClosed", err)
		}
	case <-time.After(patience):
		t.Fatal("Run did not return when its topic closed")
	}
}

func TestNewServiceOptions(t *testing.T) {
	cases := []struct {
		topic string
		opts  event.ServiceOptions
		field string
	}{
		{"", event.ServiceOptions{}, "invalid topic"},
		{"t", event.ServiceOptions{Workers: -1}, "Workers"},
		{"t", event.ServiceOptions{HandlerTimeout: -1}, "HandlerTimeout"},
		{"t", event.ServiceOptions{DrainTimeout: -1}, "DrainTimeout"},
	}
	for _, c := range cases {
		if _, err := event.NewService(c.topic, c.opts); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewService(%q, %+v): %v, want an error naming %s", c.topic, c.opts, err, c.field)
		}
	}
}

var _ = json.Marshal

func TestLeaseExtension(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		// A lease of 1 s, extended every 500 ms: an extension may take up
		// to half a second on a loaded machine (with 200 ms leases one
		// took over 100 ms under -race and the lease ran out).
		ctx := newApp(t, b, backendOptions{Lease: time.Second, Retry: fastRetry(5).Retry})
		var calls atomic.Int32
		done := make(chan struct{})
		svc, logs := newService(t, "orders", event.ServiceOptions{Workers: 2, LeaseExtension: time.Second})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			if calls.Add(1) == 1 {
				time.Sleep(2500 * time.Millisecond) // over two leases
				close(done)
			}
			return nil
		})
		start(t, ctx, svc)
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(patience):
			t.Fatal("not handled")
		}
		time.Sleep(time.Second) // a redelivery would show now
		if n := calls.Load(); n != 1 {
			t.Errorf("listener called %d times, want 1: the lease ran out while it ran", n)
		}
		eventually(t, "acked", func() bool {
			st, err := admin.TopicStats(ctx, topicOf(t, ctx, "orders"))
			return err == nil && st.Ready+st.Scheduled+st.Processing+st.Dead == 0
		})
		if l := logs.String(); strings.Contains(l, "settle failed") || strings.Contains(l, "cannot extend") {
			t.Errorf("logs:\n%s", l)
		}
	})
}

// TestObserveLastAttempt fails an event at each of its 2 attempts: Observe
// reports the first failure as retried and the last as permanent (the
// message is dead), as do the log and ServiceOptions.OnFailure, on every
// backend.
func TestObserveLastAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(2))
		type obs struct {
			attempt int
			last    bool
			perm    bool
		}
		observed := make(chan obs, 2)
		failures := make(chan pubsub.Failure, 10)
		svc, logs := newService(t, "orders", event.ServiceOptions{OnFailure: func(f pubsub.Failure) { failures <- f }, Middleware: []event.Middleware{
			event.Observe(func(_ context.Context, m event.Metadata, _ time.Duration, err error) {
				observed <- obs{m.Attempt, m.LastAttempt, event.IsPermanent(err)}
			}),
		}})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error { return errors.New("down") })
		start(t, ctx, svc)
		if err := dispatcher(t, ctx, "orders").Dispatch(ctx, OrderPlaced{ID: 1}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []obs{{1, false, false}, {2, true, true}} {
			if o := <-observed; o != want {
				t.Errorf("observed %+v, want %+v", o, want)
			}
		}
		f := <-failures
		if f.Kind != pubsub.Dead || f.Cause != pubsub.AttemptsExhausted || f.Topic != "orders" ||
			f.Subscription != pubsub.DefaultSubscription || f.MessageID == "" || f.Attempt != 2 || f.Err == nil {
			t.Errorf("OnFailure had %+v; want the message dead, attempts exhausted, at attempt 2", f)
		}
		if !strings.Contains(logs.String(), "failed at its last attempt, the message is dead") {
			t.Errorf("the log does not say the message is dead:\n%s", logs)
		}
	})
}
