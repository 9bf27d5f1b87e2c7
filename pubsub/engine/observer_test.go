package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// recorder is an Observer that writes down what it hears, adds a header
// entry to each enqueue it starts, and gives each delivery a handling
// context that names the delivery.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

type handlingKey struct{}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.seen
	r.seen = nil
	return s
}

func (r *recorder) observer() engine.Observer {
	return engine.Observer{
		StartEnqueue: func(ctx context.Context, e engine.Enqueue) (context.Context, func(engine.EnqueueEnd)) {
			ctx = pubsub.WithHeader(ctx, pubsub.Header{"observed": fmt.Sprint(e.Op)})
			return ctx, func(end engine.EnqueueEnd) {
				r.add("enqueue %s op %d n %d size %d: err %v duplicate %v", e.Topic, e.Op, e.N, e.Size, end.Err != nil, end.Duplicate)
			}
		},
		Delivered: func(d engine.Delivery) engine.Observation {
			r.add("delivered %s/%s %q attempt %d", d.Topic, d.Subscription, d.Message.Data(), pubsub.Attempt(d.Message))
			return observation{r: r, name: string(d.Message.Data())}
		},
	}
}

type observation struct {
	r    *recorder
	name string
}

func (o observation) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, handlingKey{}, o.name)
}

func (o observation) Settled(s engine.Settle) {
	o.r.add("%s %s: outcome %d reason %v err %v", s.Op, o.name, s.Outcome, s.Reason, s.Err != nil)
}

func has[T any](v any) bool {
	_, ok := pubsub.As[T](v)
	return ok
}

// TestObserver: the hook points see each enqueue (before its header is
// read), each delivery and each settle with the outcome the engine
// decided; a settle the engine refuses is not seen.
func TestObserver(t *testing.T) {
	ctx := context.Background()
	var r recorder
	ps := newMini(t, engine.Options{Observer: r.observer(), Retry: pubsub.RetryPolicy{MaxAttempts: 2, Jitter: -1}})
	tp := ps.Topic("seen")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pubsub.MessageHeader(m)["observed"]; got != fmt.Sprint(engine.OpEnqueue) {
		t.Errorf("the message's header from the observer = %q, want %q", got, fmt.Sprint(engine.OpEnqueue))
	}
	if got := pubsub.HandlingContext(ctx, m).Value(handlingKey{}); got != "x" {
		t.Errorf("HandlingContext carries %v, want the delivery's observation's context", got)
	}
	if err := pubsub.Fail(ctx, m, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrSettled) {
		t.Fatalf("second settle = %v, want ErrSettled", err)
	}
	m, err = tp.Dequeue(ctx) // the last attempt
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"enqueue seen op 0 n 1 size 1: err false duplicate false",
		`delivered seen/default "x" attempt 1`,
		fmt.Sprintf("nack x: outcome %d reason boom err false", engine.Retried),
		`delivered seen/default "x" attempt 2`,
		fmt.Sprintf("nack x: outcome %d reason <nil> err false", engine.Dead),
	}
	if got := r.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("observed\n%q\nwant\n%q", got, want)
	}
}

// TestObserverStartEnqueue: the handle's StartEnqueue is the Observer's,
// and an enqueue made with its ctx is observed once, by it.
func TestObserverStartEnqueue(t *testing.T) {
	ctx := context.Background()
	var r recorder
	tp := newMini(t, engine.Options{Observer: r.observer()}).Topic("seen")
	sctx, end := wrap.StartEnqueue(ctx, tp, 2)
	for _, d := range []string{"a", "b"} {
		if err := tp.Enqueue(sctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	end(nil)
	want := []string{"enqueue seen op 2 n 2 size -1: err false duplicate false"}
	if got := r.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("observed %q, want %q", got, want)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pubsub.MessageHeader(m)["observed"]; got != fmt.Sprint(engine.OpEnqueueBatch) {
		t.Errorf("header from StartEnqueue = %q, want %q", got, fmt.Sprint(engine.OpEnqueueBatch))
	}
}

// TestNoObserverNoHooks: without an Observer, pubsub.As finds neither
// EnqueueStarter on a handle nor ContextCarrier on a message, directly or
// through a wrapper; with one, it finds both.
func TestNoObserverNoHooks(t *testing.T) {
	ctx := context.Background()
	var r recorder
	for _, c := range []struct {
		name string
		obs  engine.Observer
		want bool
	}{{"without", engine.Observer{}, false}, {"with", r.observer(), true}} {
		t.Run(c.name, func(t *testing.T) {
			tp := newMini(t, engine.Options{Observer: c.obs}).Topic("t")
			if err := tp.Enqueue(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]bool{
				"EnqueueStarter":         has[wrap.EnqueueStarter](tp),
				"EnqueueStarter wrapped": has[wrap.EnqueueStarter](wrapper{tp}),
				"ContextCarrier":         has[wrap.ContextCarrier](m),
			} {
				if got != c.want {
					t.Errorf("pubsub.As[%s] = %v, want %v", name, got, c.want)
				}
			}
			if !has[wrap.IDAppender](m) || !has[pubsub.Attempter](m) {
				t.Error("the message's other abilities are not found")
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConformanceObserved: an Observer that adds nothing to the messages
// changes nothing a caller observes.
func TestConformanceObserved(t *testing.T) {
	h := miniHarness()
	var r recorder
	obs := engine.Observer{
		StartEnqueue: func(ctx context.Context, _ engine.Enqueue) (context.Context, func(engine.EnqueueEnd)) {
			return ctx, func(engine.EnqueueEnd) {}
		},
		Delivered: func(d engine.Delivery) engine.Observation { return observation{r: &r} },
	}
	h.New = func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
		return newMini(t, engine.Options{Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize, OnFailure: cfg.OnFailure, Observer: obs})
	}
	pubsubtest.Run(t, h)
}
