package event_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/pubsub"
)

// patience bounds every wait for something that should happen.
const patience = 20 * time.Second

// backendOptions is what a test asks of the backend it gets.
type backendOptions struct {
	Retry pubsub.RetryPolicy
	Lease time.Duration
}

// backend registers a fresh PubSub, with an empty store of its own, in the
// injector of ctx, the way an app does.
type backend struct {
	name     string
	durable  bool // dbpubsub: transactions, several processes
	register func(t testing.TB, ctx context.Context, o backendOptions)
}

// backends are the backends every behaviour test runs on. The database
// ones need PostgreSQL: run the tests through scripts/with-postgres.sh.
var backends = []backend{
	{
		name: "channelpubsub",
		register: func(t testing.TB, ctx context.Context, o backendOptions) {
			err := channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{Capacity: 1024, Retry: o.Retry, Lease: o.Lease})
			if err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name:    "dbpubsub",
		durable: true,
		register: func(t testing.TB, ctx context.Context, o backendOptions) {
			_, db := dbpubsubtest.NewStore(t)
			if err := di.RegisterSingleton(ctx, db); err != nil {
				t.Fatal(err)
			}
			err := dbpubsub.RegisterWithOptions(ctx, dbpubsub.Options{
				Retry:        o.Retry,
				Lease:        o.Lease,
				PollInterval: 50 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	},
}

// eachBackend runs f as a subtest per backend.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// newApp returns a context carrying an injector with b registered and
// event.Register called; it is shut down in t.Cleanup.
func newApp(t testing.TB, b backend, o backendOptions) context.Context {
	t.Helper()
	ctx := di.NewContext(context.Background())
	b.register(t, ctx, o)
	if err := event.Register(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := di.Shutdown(ctx); err != nil {
			t.Errorf("di.Shutdown: %v", err)
		}
	})
	return ctx
}

// fastRetry retries at once (almost), up to attempts deliveries.
func fastRetry(attempts int) backendOptions {
	return backendOptions{Retry: pubsub.RetryPolicy{MaxAttempts: attempts, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Jitter: -1}}
}

func dispatcher(t testing.TB, ctx context.Context, topic string) event.Dispatcher {
	t.Helper()
	d, err := di.ResolveNamed[event.Dispatcher](ctx, topic)
	if err != nil {
		t.Fatalf("resolve the dispatcher of %q: %v", topic, err)
	}
	return d
}

func topicOf(t testing.TB, ctx context.Context, name string) pubsub.Topic {
	t.Helper()
	tp, err := di.ResolveNamed[pubsub.Topic](ctx, name)
	if err != nil {
		t.Fatalf("resolve topic %q: %v", name, err)
	}
	return tp
}

// newService returns a service on topic with a test logger.
func newService(t testing.TB, topic string, opts event.ServiceOptions) (*event.Service, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	s, err := event.NewService(topic, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, logs
}

// start starts s on ctx; it is stopped in t.Cleanup.
func start(t testing.TB, ctx context.Context, s *event.Service) {
	t.Helper()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
}

// eventually fails t unless cond becomes true within patience.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDead waits until topic has n dead messages and returns them.
func waitDead(t testing.TB, ctx context.Context, topic string, n int) []pubsub.DeadMessage {
	t.Helper()
	tp := topicOf(t, ctx, topic)
	var dead []pubsub.DeadMessage
	eventually(t, "dead messages", func() bool {
		var err error
		dead, err = pubsub.ListDead(ctx, tp, 0)
		if err != nil {
			t.Fatalf("ListDead: %v", err)
		}
		return len(dead) >= n
	})
	if len(dead) != n {
		t.Fatalf("%d dead messages, want %d", len(dead), n)
	}
	return dead
}

// counter counts calls by key.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func (c *counter) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.n)
}

// Test events.

type OrderPlaced struct {
	ID    int    `json:"id"`
	Email string `json:"email,omitempty"`
}

func (OrderPlaced) Type() event.EventType { return "com.example.order.placed" }

// OrderShipped is used as a pointer: *OrderShipped is the event type.
type OrderShipped struct {
	ID      int      `json:"id"`
	Parcels []string `json:"parcels"`
}

func (*OrderShipped) Type() event.EventType { return "com.example.order.shipped" }

// rawEnvelope builds a wire form by hand.
func rawEnvelope(t testing.TB, typ string, data string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"specversion": "1.0", "id": event.NewID(), "source": "test", "type": typ,
		"datacontenttype": "application/json", "data": json.RawMessage(data),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
