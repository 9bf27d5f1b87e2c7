package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
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
	name    string
	durable bool // dbpubsub: transactions, several processes
	// register registers the PubSub in ctx's injector. On a durable
	// backend it returns join, which registers another PubSub on the same
	// store in another injector: another process.
	register func(t testing.TB, ctx context.Context, o backendOptions) (join func(t testing.TB, ctx context.Context))
	// newLedger returns where a listener writes its effects, guarded by
	// event.Claim, in ctx's store.
	newLedger func(t testing.TB, ctx context.Context) ledger
}

// ledger is a listener's effects: rows of a table of the test's schema,
// written in the listener's transaction (dbpubsub), or counts in memory.
type ledger interface {
	// record claims the event being handled (event.Claim, in a
	// transaction of the store if it has them) and, when the claim is the
	// first, writes one effect under key. With fail, the write fails
	// after the claim (the transaction is rolled back).
	record(ctx context.Context, key string, fail bool) (first bool, err error)
	// count is how many effects were written under key.
	count(t testing.TB, key string) int
}

// errEffect is the failure of a ledger write asked to fail.
var errEffect = errors.New("the effect failed")

// memLedger counts effects in memory; its claims are recorded at once.
type memLedger struct{ c counter }

func (l *memLedger) record(ctx context.Context, key string, fail bool) (bool, error) {
	first, err := event.Claim(ctx, nil)
	if err != nil || !first {
		return first, err
	}
	if fail {
		return first, errEffect
	}
	l.c.add(key)
	return first, nil
}

func (l *memLedger) count(_ testing.TB, key string) int { return l.c.get(key) }

// dbLedger writes effects as rows of a table in the test's schema, in the
// transaction that claims them.
type dbLedger struct{ db *bun.DB }

func newDBLedger(t testing.TB, ctx context.Context) ledger {
	t.Helper()
	db, err := di.Resolve[*bun.DB](ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS effects (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return &dbLedger{db: db}
}

func (l *dbLedger) record(ctx context.Context, key string, fail bool) (first bool, err error) {
	err = l.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		first, err = event.Claim(ctx, tx)
		if err != nil || !first {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO effects (key) VALUES (?)", key); err != nil {
			return err
		}
		if fail {
			return errEffect
		}
		return nil
	})
	return first, err
}

func (l *dbLedger) count(t testing.TB, key string) int {
	t.Helper()
	var n int
	if err := l.db.QueryRowContext(context.Background(), "SELECT count(*) FROM effects WHERE key = ?", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// backends are the backends every behaviour test runs on. The database
// ones need PostgreSQL: run the tests through scripts/with-postgres.sh.
var backends = []backend{
	{
		name: "channelpubsub",
		register: func(t testing.TB, ctx context.Context, o backendOptions) func(testing.TB, context.Context) {
			err := channelpubsub.RegisterWithOptions(ctx, channelpubsub.Options{Capacity: 1024, Retry: o.Retry, Lease: o.Lease})
			if err != nil {
				t.Fatal(err)
			}
			return nil // in-process: no other process shares its memory
		},
		newLedger: func(testing.TB, context.Context) ledger { return &memLedger{} },
	},
	{
		name:    "dbpubsub",
		durable: true,
		register: func(t testing.TB, ctx context.Context, o backendOptions) func(testing.TB, context.Context) {
			dsn, db := dbpubsubtest.NewStore(t)
			reg := func(t testing.TB, ctx context.Context, db *bun.DB) {
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
			}
			reg(t, ctx, db)
			return func(t testing.TB, ctx context.Context) { reg(t, ctx, dbpubsubtest.OpenDB(t, dsn)) }
		},
		newLedger: newDBLedger,
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

// eachDurableBackend runs f as a subtest per backend shared by processes:
// the in-process ones are left out, since no other process sees their
// memory.
func eachDurableBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		if b.durable {
			t.Run(b.name, func(t *testing.T) {
				t.Parallel()
				f(t, b)
			})
		}
	}
}

// newApp returns a context carrying an injector with b registered and
// event.Register called; it is shut down in t.Cleanup.
func newApp(t testing.TB, b backend, o backendOptions) context.Context {
	ctx, _ := newAppJoin(t, b, o)
	return ctx
}

// newAppJoin is newApp, also returning join (see backend.register): nil
// on an in-process backend, else a func returning another app on the same
// store, as another process would run it.
func newAppJoin(t testing.TB, b backend, o backendOptions) (ctx context.Context, join func(t testing.TB) context.Context) {
	t.Helper()
	ctx = di.NewContext(context.Background())
	joinStore := b.register(t, ctx, o)
	app := func(t testing.TB, ctx context.Context) {
		t.Helper()
		if err := event.Register(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := di.Shutdown(ctx); err != nil {
				t.Errorf("di.Shutdown: %v", err)
			}
		})
	}
	app(t, ctx)
	if joinStore == nil {
		return ctx, nil
	}
	return ctx, func(t testing.TB) context.Context {
		t.Helper()
		other := di.NewContext(context.Background())
		joinStore(t, other)
		app(t, other)
		return other
	}
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
func waitDead(t testing.TB, ctx context.Context, topic string, n int) []admin.DeadMessage {
	t.Helper()
	tp := topicOf(t, ctx, topic)
	var dead []admin.DeadMessage
	eventually(t, "dead messages", func() bool {
		var err error
		dead, err = admin.ListDead(ctx, tp, 0)
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
