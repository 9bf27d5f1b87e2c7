// Package dbpubsubtest helps tests run dbpubsub against a real PostgreSQL:
// each test gets a schema of its own, migrated, and dropped when it ends.
//
//	func TestCheckout(t *testing.T) {
//		dsn, db := dbpubsubtest.NewStore(t)
//		ps := dbpubsubtest.New(t, db, dbpubsub.Options{Lease: time.Second})
//		other := dbpubsubtest.New(t, dbpubsubtest.OpenDB(t, dsn), dbpubsub.Options{}) // "another process"
//		...
//	}
//
// The server is $DATABASE_URL when set, else PostgreSQL on 127.0.0.1:5432;
// without either the test fails, saying how to get one (`make test` starts
// a throwaway cluster). It never skips.
package dbpubsubtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// NewStore returns a fresh migrated schema of its own for t: a DSN whose
// connections use it, and a DB on it, closed when t ends.
func NewStore(t testing.TB) (dsn string, db *bun.DB) {
	t.Helper()
	dsn, db = pgtest.NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatalf("migrations.Migrate: %v", err)
	}
	return dsn, db
}

// New returns a PubSub on db, closed when t ends.
func New(t testing.TB, db *bun.DB, opts dbpubsub.Options) *dbpubsub.PubSub {
	t.Helper()
	ps, err := dbpubsub.New(db, opts)
	if err != nil {
		t.Fatalf("dbpubsub.New: %v", err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// OpenDB opens another DB on dsn, as another process would, closed when t
// ends.
func OpenDB(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		t.Fatalf("dbpubsub.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// NextUnfinished is the Dequeue of a consumer that stops when the work is
// done, whoever did it: it waits up to patience for a message of tp, and
// while none comes, looks whether any row of db's message table (the
// default one) is still unfinished. It returns nil and no error once none
// is.
func NextUnfinished(ctx context.Context, tp pubsub.Topic, db *bun.DB, patience time.Duration) (pubsub.Message, error) {
	for {
		dctx, cancel := context.WithTimeout(ctx, patience)
		m, err := tp.Dequeue(dctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return m, err
		}
		var left int
		if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM "+migrations.AllView(dbpubsub.DefaultTable)+" WHERE status <> 'finished'").Scan(&left); err != nil {
			return nil, err
		}
		if left == 0 {
			return nil, nil
		}
	}
}

// ReadyTable returns the schema-qualified name of the table where topic's
// messages for now wait until their first claim (in db's schema, beside
// the default message table), creating it if the topic has none yet: for
// tests that look into it or put a trigger on it.
func ReadyTable(t testing.TB, db *bun.DB, topic string) string {
	t.Helper()
	var name string
	q := "SELECT " + migrations.ReadyTableFunc(dbpubsub.DefaultTable) + "($1)"
	if err := db.DB.QueryRowContext(context.Background(), q, topic).Scan(&name); err != nil {
		t.Fatalf("ready table of topic %q: %v", topic, err)
	}
	return name
}

// AddHistory inserts rows of topic straight into db's message table (the
// default one, conveyor_events), as a deployment that ran for a while has
// them: finished acked rows and dead rows (last error "cannot decode"),
// spread over the last minutes, and scheduled pending rows due in the
// future; each with 200 bytes of data. It then analyzes the table. The
// inspection benchmarks measure on it.
func AddHistory(tb testing.TB, db *bun.DB, topic string, finished, dead, scheduled int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data, status, run_at, created_at, finished_at, attempts, last_error)
		SELECT ?, convert_to(repeat('x', 200), 'UTF8'), s, now() - i * interval '1 ms', now() - i * interval '1 ms', now() - i * interval '1 ms', 1,
			CASE WHEN s = 'dead' THEN 'cannot decode' END
		FROM (SELECT 'finished' AS s, i FROM generate_series(1, ?) i
			UNION ALL SELECT 'dead', i FROM generate_series(1, ?) i
			UNION ALL SELECT 'pending', -i * 1000 FROM generate_series(1, ?) i) AS r`, topic, finished, dead, scheduled); err != nil {
		tb.Fatalf("dbpubsubtest.AddHistory: %v", err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE conveyor_events`); err != nil {
		tb.Fatalf("dbpubsubtest.AddHistory: %v", err)
	}
	tb.Logf("inserted %d finished, %d dead, %d scheduled rows of topic %q in %v", finished, dead, scheduled, topic, time.Since(t0).Round(time.Millisecond))
}

// Harness is the conformance suite's harness for dbpubsub with base's
// options (ConfirmAck, PollInterval, ...) and the suite's retry policy,
// lease and size limit: each New gets a fresh schema, and Reopen a second
// PubSub on another DB of the same schema, as another process would.
func Harness(base dbpubsub.Options) pubsubtest.Harness {
	var dsns sync.Map // *dbpubsub.PubSub -> the DSN of its schema
	options := func(cfg pubsubtest.Config) dbpubsub.Options {
		o := base
		o.Retry, o.Lease, o.MaxDataSize, o.OnFailure = cfg.Retry, cfg.Lease, cfg.MaxDataSize, cfg.OnFailure
		return o
	}
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			dsn, db := NewStore(t)
			ps := New(t, db, options(cfg))
			dsns.Store(ps, dsn)
			return ps
		},
		Reopen: func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			dsn, ok := dsns.Load(ps)
			if !ok {
				t.Fatal("Reopen of a PubSub not made by New")
			}
			other := New(t, OpenDB(t, dsn.(string)), options(cfg))
			dsns.Store(other, dsn)
			return other
		},
		Register: func(t testing.TB, ctx context.Context) error {
			_, db := NewStore(t)
			if err := di.RegisterSingleton(ctx, db); err != nil {
				return err
			}
			return dbpubsub.RegisterWithOptions(ctx, base)
		},
		Abilities: Abilities(),
	}
}

// Abilities are what dbpubsub offers, as the conformance suite declares
// them.
func Abilities() pubsubtest.Abilities {
	a := pubsubtest.AllMessageAbilities()
	a.Durable, a.Shared, a.FailureHook, a.Quiesce = true, true, true, true
	return a
}
