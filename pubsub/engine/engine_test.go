package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/minidriver"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// newMini returns an engine over the smallest driver, closed at the end
// of the test.
func newMini(t testing.TB, opts engine.Options) *engine.PubSub {
	t.Helper()
	opts.Name = "minidriver"
	ps, err := engine.New(minidriver.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// miniHarness runs the conformance suite on the engine over a store with
// none of the optional capabilities: what the engine gives every store
// (attempts, lease extension, fail reasons, reject, the failure hook) is
// all the suite may find.
func miniHarness() pubsubtest.Harness {
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			return newMini(t, engine.Options{Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize, OnFailure: cfg.OnFailure})
		},
		Register: func(_ testing.TB, ctx context.Context) error {
			return backend.Register(ctx, nil, func(context.Context) (*engine.PubSub, error) {
				return engine.New(minidriver.New(), engine.Options{Name: "minidriver"})
			})
		},
		Abilities: pubsubtest.Abilities{Attempts: true, ExtendLease: true, FailReasons: true, Reject: true, FailureHook: true, Quiesce: true},
	}
}

func TestConformanceMinimalStore(t *testing.T) { pubsubtest.Run(t, miniHarness()) }

func TestConformanceMinimalStoreWrapped(t *testing.T) {
	pubsubtest.Run(t, pubsubtest.Wrap(miniHarness()))
}

// TestAbilitiesFollowTheStore: a handle over a store without a capability
// does not report the ability (pubsub.As), directly or through a wrapper,
// and its own method returns ErrUnsupported.
func TestAbilitiesFollowTheStore(t *testing.T) {
	ctx := context.Background()
	ps := newMini(t, engine.Options{})
	tp := ps.Topic("t")
	wrapped := wrapper{tp}
	for name, has := range map[string]func(v any) bool{
		"Delayer":        func(v any) bool { _, ok := pubsub.As[pubsub.Delayer](v); return ok },
		"BatchEnqueuer":  func(v any) bool { _, ok := pubsub.As[pubsub.BatchEnqueuer](v); return ok },
		"UniqueEnqueuer": func(v any) bool { _, ok := pubsub.As[pubsub.UniqueEnqueuer](v); return ok },
		"DeadLetters":    func(v any) bool { _, ok := pubsub.As[admin.DeadLetters](v); return ok },
		"Stater":         func(v any) bool { _, ok := pubsub.As[admin.Stater](v); return ok },
		"Peeker":         func(v any) bool { _, ok := pubsub.As[admin.Peeker](v); return ok },
		"Canceler":       func(v any) bool { _, ok := pubsub.As[admin.Canceler](v); return ok },
		"DeadDeleter":    func(v any) bool { _, ok := pubsub.As[admin.DeadDeleter](v); return ok },
		"Pauser":         func(v any) bool { _, ok := pubsub.As[admin.Pauser](v); return ok },
		"AckCounter":     func(v any) bool { _, ok := pubsub.As[admin.AckCounter](v); return ok },
		"Inbox":          func(v any) bool { _, ok := pubsub.As[pubsub.Inbox](v); return ok },
	} {
		if has(tp) {
			t.Errorf("pubsub.As[%s] on a handle of a store without it: true", name)
		}
		if has(wrapped) {
			t.Errorf("pubsub.As[%s] through a wrapper of a store without it: true", name)
		}
	}
	if _, ok := pubsub.As[wrap.RetryReporter](tp); !ok {
		t.Error("pubsub.As[RetryReporter]: false, want the engine's own ability")
	}
	if _, ok := pubsub.As[pubsub.Subscriber](ps); ok {
		t.Error("pubsub.As[Subscriber] on a store without subscriptions: true")
	}
	if _, ok := pubsub.As[admin.TopicLister](ps); ok {
		t.Error("pubsub.As[TopicLister] on a store without a topic list: true")
	}

	// Called directly, each says ErrUnsupported; the helpers fall back
	// where they document one.
	direct := tp.(interface {
		pubsub.BatchEnqueuer
		pubsub.Delayer
		admin.Stater
	})
	if err := direct.EnqueueBatch(ctx, [][]byte{[]byte("x")}); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("EnqueueBatch on a store without batches: %v, want ErrUnsupported", err)
	}
	if err := direct.EnqueueAt(ctx, []byte("x"), time.Now()); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("EnqueueAt on a store without delays: %v, want ErrUnsupported", err)
	}
	if _, err := direct.Stats(ctx); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("Stats on a store without stats: %v, want ErrUnsupported", err)
	}
	if err := pubsub.EnqueueBatch(ctx, wrapped, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatalf("pubsub.EnqueueBatch's fallback: %v", err)
	}
	for _, want := range []string{"a", "b"} {
		m, err := tp.Dequeue(ctx)
		if err != nil || string(m.Data()) != want {
			t.Fatalf("Dequeue = %v, %v; want %q", m, err, want)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pubsub.Subscribe(ctx, ps, "t", "other"); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("Subscribe to a named subscription without subscriptions: %v, want ErrUnsupported", err)
	}
}

// TestSettleOnce: whatever the store, a delivery settles once.
func TestSettleOnce(t *testing.T) {
	ctx := context.Background()
	tp := newMini(t, engine.Options{}).Topic("once")
	for _, settle := range []struct {
		name string
		f    func(pubsub.Message) error
	}{
		{"Ack", func(m pubsub.Message) error { return m.Ack(ctx) }},
		{"Nack", func(m pubsub.Message) error { return m.Nack(ctx) }},
		{"Reject", func(m pubsub.Message) error { return pubsub.Reject(ctx, m, errors.New("no")) }},
	} {
		if err := tp.Enqueue(ctx, []byte(settle.name)); err != nil {
			t.Fatal(err)
		}
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := settle.f(m); err != nil {
			t.Fatalf("%s: %v", settle.name, err)
		}
		for what, again := range map[string]error{
			"Ack":         m.Ack(ctx),
			"Nack":        m.Nack(ctx),
			"Reject":      pubsub.Reject(ctx, m, nil),
			"ExtendLease": pubsub.ExtendLease(ctx, m, time.Second),
		} {
			if !errors.Is(again, pubsub.ErrSettled) || !strings.Contains(again.Error(), `topic "once"`) {
				t.Errorf("%s after %s: %v, want ErrSettled naming the topic", what, settle.name, again)
			}
		}
	}
}

// TestLeaseLost: a delivery whose lease ran out does not settle; the
// newer one does.
func TestLeaseLost(t *testing.T) {
	ctx := context.Background()
	tp := newMini(t, engine.Options{Lease: 20 * time.Millisecond}).Topic("lease")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	old, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := tp.Dequeue(ctx) // waits for the lease to run out
	if err != nil {
		t.Fatal(err)
	}
	if got := pubsub.Attempt(fresh); got != 2 {
		t.Fatalf("redelivery's attempt = %d, want 2", got)
	}
	for range 2 {
		if err := old.Ack(ctx); !errors.Is(err, pubsub.ErrLeaseExpired) {
			t.Fatalf("Ack of the expired delivery: %v, want ErrLeaseExpired", err)
		}
	}
	if err := pubsub.ExtendLease(ctx, fresh, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Ack(ctx); err != nil {
		t.Fatalf("Ack of the newer delivery: %v", err)
	}
}

// TestRetryDecision: the engine retries a failed delivery after the
// backoff, makes it dead on its last attempt, and tells the hook why.
func TestRetryDecision(t *testing.T) {
	ctx := context.Background()
	var log pubsubtest.FailureLog
	tp := newMini(t, engine.Options{
		Retry:     pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: time.Millisecond, Jitter: -1},
		OnFailure: log.Hook,
	}).Topic("retry")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := pubsub.Attempt(m); got != attempt {
			t.Fatalf("attempt = %d, want %d", got, attempt)
		}
		if err := pubsub.Fail(ctx, m, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f, err := log.Wait(wctx, func(f pubsub.Failure) bool { return f.Kind == pubsub.Dead })
	if err != nil {
		t.Fatalf("no Dead failure: %v", err)
	}
	if f.Cause != pubsub.AttemptsExhausted || f.Attempt != 2 || f.Err == nil || f.Err.Error() != "boom" || f.Topic != "retry" {
		t.Fatalf("Dead failure = %+v, want attempts exhausted at attempt 2 with the reason", f)
	}
	short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if m, err := tp.Dequeue(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dequeue after the message died = %v, %v; want nothing", m, err)
	}
}

// TestInputChecks: what the engine refuses before the store sees it.
func TestInputChecks(t *testing.T) {
	ctx := context.Background()
	ps := newMini(t, engine.Options{MaxDataSize: 4})
	tp := ps.Topic("checks")
	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"too large":        {tp.Enqueue(ctx, []byte("12345")), pubsub.ErrTooLarge},
		"transaction":      {tp.Enqueue(pubsub.WithTx(ctx, struct{}{}), []byte("1")), pubsub.ErrUnsupported},
		"bad header":       {tp.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"": "v"}), []byte("1")), pubsub.ErrInvalidHeader},
		"bad topic":        {ps.Topic(" bad").Enqueue(ctx, []byte("1")), pubsub.ErrInvalidTopic},
		"bad subscription": {func() error { _, err := ps.Subscribe(ctx, "t", ""); return err }(), pubsub.ErrInvalidSubscription},
	} {
		if !errors.Is(c.err, c.want) || !strings.HasPrefix(c.err.Error(), "minidriver: ") {
			t.Errorf("%s: %v, want %v from minidriver", name, c.err, c.want)
		}
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tp.Close(); !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if _, err := tp.Dequeue(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("Dequeue on a closed handle: %v, want ErrClosed", err)
	}
	if _, err := engine.New(minidriver.New(), engine.Options{}); err == nil || !strings.Contains(err.Error(), "Options.Name") {
		t.Errorf("New without a name: %v, want an error naming Options.Name", err)
	}
	if _, err := engine.New(minidriver.New(), engine.Options{Name: "x", Lease: -1}); err == nil || !strings.Contains(err.Error(), "Options.Lease") {
		t.Errorf("New with a negative lease: %v, want an error naming Options.Lease", err)
	}
}

// TestCloseEndsWaitingCalls: Close ends a Dequeue waiting, and a delivery
// in hand then fails to settle with ErrClosed.
func TestCloseEndsWaitingCalls(t *testing.T) {
	ctx := context.Background()
	ps, err := engine.New(minidriver.New(), engine.Options{Name: "minidriver"})
	if err != nil {
		t.Fatal(err)
	}
	tp := ps.Topic("close")
	_ = tp.Enqueue(ctx, []byte("x"))
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { _, err := tp.Dequeue(ctx); waiting <- err }()
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("Dequeue waiting at Close: %v, want ErrClosed", err)
	}
	if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("Ack after Close: %v, want ErrClosed", err)
	}
	if err := ps.Close(); !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// wrapper is a middleware's topic: it exposes what it wraps.
type wrapper struct{ pubsub.Topic }

func (w wrapper) Unwrap() pubsub.Topic { return w.Topic }

// named is what relay asks of a source handle for its default Source.
type named interface {
	Name() string
	Subscription() string
}

// TestNamed: a handle names its topic and subscription, directly or
// through a wrapper, only with Options.Named.
func TestNamed(t *testing.T) {
	ctx := context.Background()
	if _, ok := pubsub.As[named](newMini(t, engine.Options{}).Topic("t")); ok {
		t.Fatal("a handle without Options.Named names its topic")
	}
	ps := newMini(t, engine.Options{Named: true})
	sub, err := ps.Subscribe(ctx, "t", pubsub.DefaultSubscription)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []pubsub.Topic{ps.Topic("t"), wrapper{ps.Topic("t")}, sub} {
		n, ok := pubsub.As[named](tp)
		if !ok || n.Name() != "t" || n.Subscription() != pubsub.DefaultSubscription {
			t.Fatalf("As[named](%T) = %v, %v; want the names of topic t's default subscription", tp, n, ok)
		}
	}
}
