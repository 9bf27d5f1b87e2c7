package dbpubsub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

func dequeueWithin(t *testing.T, tp pubsub.Topic, d time.Duration) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	return m
}

func expectNone(t *testing.T, tp pubsub.Topic, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := tp.Dequeue(ctx); err == nil {
		t.Fatalf("got message %s %q, want none", m.ID(), m.Data())
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dequeue: %v, want context.DeadlineExceeded", err)
	}
}

// countRows counts the messages that match where, wherever they are
// stored (the view over the message and ready tables).
func countRows(t *testing.T, db *bun.DB, where string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM conveyor_events_all WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// countMain counts the rows of the message table alone (not the ready
// table's) that match where.
func countMain(t *testing.T, db *bun.DB, where string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM conveyor_events WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic("orders")
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		run    func(data []byte) error
		commit bool
	}{
		{"TxCommitted", func(data []byte) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO orders VALUES (1)"); err != nil {
					return err
				}
				return tp.Enqueue(dbpubsub.WithTx(ctx, tx), data)
			})
		}, true},
		{"TxRolledBack", func(data []byte) error {
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if err := tp.Enqueue(dbpubsub.WithTx(ctx, tx), data); err != nil {
					return err
				}
				return errors.New("the order failed")
			})
			if err == nil || err.Error() != "the order failed" {
				return fmt.Errorf("RunInTx: %v", err)
			}
			return nil
		}, false},
		{"BatchTxRolledBack", func(data []byte) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := pubsub.EnqueueBatch(dbpubsub.WithTx(ctx, tx), tp, [][]byte{data, data}); err != nil {
				return err
			}
			return tx.Rollback()
		}, false},
		{"BatchTxCommitted", func(data []byte) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := pubsub.EnqueueBatch(dbpubsub.WithTx(ctx, &tx), tp, [][]byte{data}); err != nil {
				return err
			}
			return tx.Commit()
		}, true},
		{"Conn", func(data []byte) error {
			conn, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			return tp.Enqueue(dbpubsub.WithTx(ctx, conn), data)
		}, true},
		{"DB", func(data []byte) error { return tp.Enqueue(dbpubsub.WithTx(ctx, db), data) }, true},
		// WithTx: code that knows only a pubsub.Topic writes in the tx.
		{"WithTxRolledBack", func(data []byte) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			txctx := dbpubsub.WithTx(ctx, tx)
			if err := tp.Enqueue(txctx, data); err != nil {
				return err
			}
			if err := pubsub.EnqueueBatch(txctx, tp, [][]byte{data}); err != nil {
				return err
			}
			if ok, err := pubsub.EnqueueUnique(txctx, tp, "rolled-back", data); !ok || err != nil {
				return fmt.Errorf("EnqueueUnique in a tx = %v, %v", ok, err)
			}
			return tx.Rollback()
		}, false},
		{"WithTxCommitted", func(data []byte) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return tp.Enqueue(dbpubsub.WithTx(ctx, tx), data)
			})
		}, true},
	}
	for _, c := range cases {
		if err := c.run([]byte(c.name)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	var got []string
	for range 5 {
		m := dequeueWithin(t, tp, 10*time.Second)
		got = append(got, string(m.Data()))
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expectNone(t, tp, 300*time.Millisecond)
	want := "TxCommitted BatchTxCommitted Conn DB WithTxCommitted"
	if strings.Join(got, " ") != want {
		t.Fatalf("delivered %v, want %s (never the rolled-back ones)", got, want)
	}
	if n := countRows(t, db, "true"); n != 5 {
		t.Fatalf("%d rows, want 5", n)
	}
	// A bun.IDB of no kind this package writes in is refused, as a
	// transaction of another store is (the conformance suite).
	if err := tp.Enqueue(dbpubsub.WithTx(ctx, otherIDB{db}), nil); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Fatalf("Enqueue in an unknown bun.IDB: %v, want ErrUnsupported", err)
	}
}

type otherIDB struct{ bun.IDB }

// A consumer waiting with a poll interval of a minute is woken by the
// NOTIFY of an enqueue made by another PubSub (another process).
func TestListenNotifyWakesIdleConsumer(t *testing.T) {
	t.Parallel()
	const poll = time.Minute
	dsn, db := newStore(t)
	consumer := newPubSub(t, db, dbpubsub.Options{PollInterval: poll})
	producer := newPubSub(t, openDB(t, dsn), dbpubsub.Options{PollInterval: poll})
	in, out := producer.Topic("wake"), consumer.Topic("wake")

	// Make sure the consumer is idle: it found nothing and went to sleep.
	expectNone(t, out, 500*time.Millisecond)

	for i, enqueue := range []func() error{
		func() error { return in.Enqueue(context.Background(), []byte("plain")) },
		func() error {
			return db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
				return in.Enqueue(dbpubsub.WithTx(ctx, tx), []byte("in a transaction"))
			})
		},
		func() error { return pubsub.EnqueueBatch(context.Background(), in, [][]byte{[]byte("batch")}) },
	} {
		got := make(chan time.Duration, 1)
		go func() {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), poll)
			defer cancel()
			if m, err := out.Dequeue(ctx); err == nil {
				_ = m.Ack(context.Background())
			}
			got <- time.Since(start)
		}()
		time.Sleep(200 * time.Millisecond) // the consumer waits
		start := time.Now()
		if err := enqueue(); err != nil {
			t.Fatal(err)
		}
		d := <-got
		if since := time.Since(start); since > poll/10 {
			t.Fatalf("enqueue %d: delivered %v after the enqueue (consumer waited %v), want well under the poll interval %v", i, since, d, poll)
		}
	}
}

// A consumer that finds nothing due sleeps until the next delayed message
// is, not until its poll: after a claim that came back short, the fetcher
// asks when that is. The consumer does not LISTEN, and the message comes
// from another PubSub, so nothing else wakes it.
func TestFetcherSleepsUntilTheNextDueMessage(t *testing.T) {
	t.Parallel()
	const poll = time.Minute
	dsn, db := newStore(t)
	consumer := newPubSub(t, db, dbpubsub.Options{PollInterval: poll, NoListen: true})
	producer := newPubSub(t, openDB(t, dsn), dbpubsub.Options{PollInterval: poll})
	in, out := producer.Topic("due"), consumer.Topic("due")
	if err := pubsub.EnqueueDelayed(context.Background(), in, []byte("later"), 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), poll/2)
	defer cancel()
	m, err := out.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v; want the delayed message once due, well before the poll interval %v", err, poll)
	}
	if err := m.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNotMigrated(t *testing.T) {
	t.Parallel()
	_, db := pgtest.NewSchema(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic("x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "migrations.Migrate") {
			t.Fatalf("%s on a schema never migrated: %v, want ErrNotMigrated naming migrations.Migrate", what, err)
		}
		if n := strings.Count(err.Error(), "dbpubsub:"); n > 1 {
			t.Errorf("%s on a schema never migrated: %v; says dbpubsub %d times", what, err, n)
		}
	}
	check("Enqueue", tp.Enqueue(ctx, []byte("x")))
	_, err := tp.Dequeue(ctx)
	check("Dequeue", err)
	_, err = ps.Subscribe(ctx, "x", "s")
	check("Subscribe", err)
	_, err = ps.Subscriptions(ctx, "x")
	check("Subscriptions", err)
	_, _, err = pubsub.Claim(ctx, tp, "k")
	check("Claim", err)
	_, err = admin.TopicStats(ctx, tp)
	check("Stats", err)
	check("Verify", migrations.Verify(ctx, db))
}

func TestDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1 of the loopback interface.
	db, err := dbpubsub.Open("postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var logs syncbuf.Buffer
	ps := newPubSub(t, db, dbpubsub.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	tp := ps.Topic("x")
	ctx := context.Background()

	err = tp.Enqueue(ctx, []byte("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "dbpubsub: ") || errors.Is(err, migrations.ErrNotMigrated) {
		t.Fatalf("Enqueue with the database down: %v, want a dbpubsub error", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, err := tp.Dequeue(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dequeue with the database down: %v, want it to wait until ctx ends", err)
	}
	if got := logs.String(); strings.Count(got, "level=WARN") < 2 {
		t.Fatalf("Dequeue with the database down logged %q, want its retries logged", got)
	}
}

// Rows claimed for Dequeue calls that gave up are given back at once, not
// held until their lease runs out.
func TestAbandonedClaimsAreGivenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, db := newStore(t)
	lease := time.Hour
	impatient := newPubSub(t, db, dbpubsub.Options{Lease: lease})
	patient := newPubSub(t, openDB(t, dsn), dbpubsub.Options{Lease: lease})
	const n = 300
	batch := make([][]byte, n)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "%d", i)
	}
	tp := impatient.Topic("t")
	// Many Dequeue calls that give up while rows are enqueued: some give up
	// after their rows were claimed.
	var wg sync.WaitGroup
	taken := make(chan pubsub.Message, n)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				dctx, cancel := context.WithTimeout(ctx, time.Duration(1+len(taken)%3)*time.Millisecond)
				if m, err := tp.Dequeue(dctx); err == nil {
					taken <- m
				}
				cancel()
			}
		}()
	}
	if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(taken)
	for m := range taken {
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	other := patient.Topic("t")
	deadline := time.Now().Add(15 * time.Second)
	for countRows(t, db, "status <> 'finished'") > 0 {
		if time.Now().After(deadline) {
			logUnfinished(t, db)
			t.Fatalf("%d rows still not finished, %d of them processing: claimed rows were not given back",
				countRows(t, db, "status <> 'finished'"), countRows(t, db, "status = 'processing'"))
		}
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		m, err := other.Dequeue(dctx)
		cancel()
		if err == nil {
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := countRows(t, db, "attempts <> 1"); n != 0 {
		t.Fatalf("%d rows with attempts other than 1: a row given back must not count an attempt", n)
	}
}

// logUnfinished logs, for a failing test, where the unfinished rows of the
// default message table are (which table, which state) and the statements
// of the schema that the server is running, with what they wait on.
func logUnfinished(t *testing.T, db *bun.DB) {
	t.Helper()
	for _, q := range []string{
		`SELECT format('row %s: %s, attempts %s, token %s', id, status, attempts, token)
			FROM conveyor_events WHERE status <> 'finished'
		UNION ALL
		SELECT format('row %s: waiting in %s', id, tableoid::regclass) FROM conveyor_events_ready`,
		`SELECT format('backend %s %s, waiting on %s/%s: %s', pid, state, wait_event_type, wait_event, left(query, 120))
			FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND strpos(query, current_schema()) > 0`,
	} {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Logf("%s: %v", q, err)
			continue
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err == nil {
				t.Log(line)
			}
		}
		rows.Close()
	}
}

// Close gives back the rows claimed and not handed out.
func TestCloseGivesBackClaimedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, db := newStore(t)
	one := newPubSub(t, db, dbpubsub.Options{Lease: time.Hour})
	tp := one.Topic("t")
	if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	m := dequeueWithin(t, tp, 10*time.Second)
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	if err := one.Close(); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Ack after the PubSub closed: %v, want ErrClosed", err)
	}
	if _, err := tp.Dequeue(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Dequeue after the PubSub closed: %v, want ErrClosed", err)
	}
	two := newPubSub(t, openDB(t, dsn), dbpubsub.Options{Lease: time.Hour})
	got := dequeueWithin(t, two.Topic("t"), 10*time.Second)
	if string(got.Data()) != "b" {
		t.Fatalf("got %q, want b", got.Data())
	}
}

func TestStatsOldestReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic("s")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	s, err := admin.TopicStats(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ready != 1 || s.OldestReady < 90*time.Millisecond || s.OldestReady > time.Minute {
		t.Fatalf("Stats = %+v, want 1 ready, waiting about 100ms", s)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Retention: time.Hour})
	tp := ps.Topic("p")
	for range 5 {
		if err := tp.Enqueue(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := dequeueWithin(t, tp, 10*time.Second).Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, ps)
	// Two finished rows are past the retention, one is not.
	if _, err := db.ExecContext(ctx, `UPDATE conveyor_events SET finished_at = now() - interval '2 hours'
		WHERE id IN (SELECT id FROM conveyor_events WHERE status = 'finished' ORDER BY id LIMIT 2)`); err != nil {
		t.Fatal(err)
	}
	n, err := ps.Prune(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2, nil", n, err)
	}
	if got := countRows(t, db, "status = 'finished'"); got != 1 {
		t.Fatalf("%d finished rows left, want 1", got)
	}
	if got := countRows(t, db, "status <> 'finished'"); got != 2 {
		t.Fatalf("%d unfinished rows left, want 2 (pruning only deletes finished rows)", got)
	}
}

func TestOptionsValidated(t *testing.T) {
	t.Parallel()
	db, err := dbpubsub.Open("postgres://postgres@127.0.0.1:1/postgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, c := range []struct {
		name  string
		opts  dbpubsub.Options
		field string
	}{
		{"NegativeLease", dbpubsub.Options{Lease: -1}, "Lease"},
		{"NegativeSize", dbpubsub.Options{MaxDataSize: -1}, "MaxDataSize"},
		{"NegativePoll", dbpubsub.Options{PollInterval: -1}, "PollInterval"},
		{"NegativeBatch", dbpubsub.Options{ClaimBatch: -1}, "ClaimBatch"},
		{"BadTable", dbpubsub.Options{Table: `x"; DROP TABLE y`}, "Table"},
		{"BadRetry", dbpubsub.Options{Retry: pubsub.RetryPolicy{MaxAttempts: -1}}, "Retry"},
		{"NegativeMaxBatchSize", dbpubsub.Options{MaxBatchSize: -1}, "MaxBatchSize"},
		{"MaxBatchSizeOverTheLimit", dbpubsub.Options{MaxBatchSize: 1 << 30}, "MaxBatchSize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := dbpubsub.New(db, c.opts); err == nil || !strings.Contains(err.Error(), "Options."+c.field) {
				t.Fatalf("New: %v, want an error naming Options.%s", err, c.field)
			}
		})
	}
	if _, err := dbpubsub.New(nil, dbpubsub.Options{}); err == nil {
		t.Fatal("New(nil): no error")
	}
}

// A custom table name is honoured by migrations and the PubSub alike.
func TestCustomTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db, migrations.WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	ps := newPubSub(t, db, dbpubsub.Options{Table: "jobs"})
	tp := ps.Topic("t")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := dequeueWithin(t, tp, 10*time.Second).Ack(ctx); err != nil {
		t.Fatal(err)
	}
	flush(t, ps)
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE status = 'finished'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("finished rows in jobs: %d, %v; want 1", n, err)
	}
}

// The listener reconnects on its own when its connection is lost, and
// waiting consumers are woken by notifications again.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	const poll = time.Minute
	ctx := context.Background()
	dsn, db := newStore(t)
	var logs syncbuf.Buffer
	consumer := newPubSub(t, db, dbpubsub.Options{PollInterval: poll, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	producer := newPubSub(t, openDB(t, dsn), dbpubsub.Options{PollInterval: poll})
	in, out := producer.Topic("reconnect"), consumer.Topic("reconnect")
	expectNone(t, out, 300*time.Millisecond) // the consumer listens
	pid := consumer.ListenerPID()
	for wait := time.Now().Add(10 * time.Second); pid == 0; pid = consumer.ListenerPID() {
		// On a loaded machine the listener may connect after the first
		// Dequeue gave up.
		if time.Now().After(wait) {
			t.Fatal("the consumer has no listening connection 10 s after its first Dequeue")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := db.DB.ExecContext(ctx, "SELECT pg_terminate_backend($1)", int64(pid)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p := consumer.ListenerPID(); p == 0 || p == pid; p = consumer.ListenerPID() {
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not reconnect within 10s; logs:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	expectNone(t, out, 300*time.Millisecond) // idle again, listening on the new connection
	start := time.Now()
	if err := in.Enqueue(ctx, []byte("after the reconnection")); err != nil {
		t.Fatal(err)
	}
	m := dequeueWithin(t, out, poll/2)
	if d := time.Since(start); d > poll/10 {
		t.Fatalf("delivered %v after the enqueue, want well under the poll interval %v", d, poll)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "listener connection lost") {
		t.Errorf("the lost connection was not logged; logs:\n%s", logs.String())
	}
}

// A consumer is woken by another process's enqueue whatever its wake-up
// configuration: LISTEN on a connection made from the DB's configuration,
// LISTEN on Options.ListenDSN, or polling only.
func TestWakeUpModes(t *testing.T) {
	t.Parallel()
	dsn, db := newStore(t)
	producer := newPubSub(t, openDB(t, dsn), dbpubsub.Options{})
	for _, c := range []struct {
		name   string
		opts   dbpubsub.Options
		within time.Duration
	}{
		{"Listen", dbpubsub.Options{PollInterval: time.Minute}, 10 * time.Second},
		{"ListenDSN", dbpubsub.Options{PollInterval: time.Minute, ListenDSN: dsn}, 10 * time.Second},
		{"NoListen", dbpubsub.Options{PollInterval: 200 * time.Millisecond, NoListen: true}, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			consumer := newPubSub(t, db, c.opts)
			out := consumer.Topic(c.name)
			expectNone(t, out, 300*time.Millisecond)
			if err := producer.Topic(c.name).Enqueue(context.Background(), []byte(c.name)); err != nil {
				t.Fatal(err)
			}
			m := dequeueWithin(t, out, c.within)
			if err := m.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A consumer slower than the claims does not make the rows it prefetched
// go back and forth: once prefetched rows had to be given back, it stops
// prefetching.
func TestSlowConsumerDoesNotChurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	tp := newPubSub(t, db, dbpubsub.Options{}).Topic("slow")
	const n = 12
	for i := range n {
		if err := tp.Enqueue(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		m := dequeueWithin(t, tp, 10*time.Second)
		if string(m.Data()) != fmt.Sprint(i) {
			t.Fatalf("got %q, want %d", m.Data(), i)
		}
		time.Sleep(80 * time.Millisecond) // slower than the grace for buffered rows
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var claims, attempts int
	if err := db.QueryRowContext(ctx, "SELECT sum(token), sum(attempts) FROM conveyor_events").Scan(&claims, &attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != n {
		t.Errorf("%d attempts counted for %d deliveries", attempts, n)
	}
	if claims > 2*n {
		t.Errorf("%d claims for %d messages: prefetched rows churn", claims, n)
	}
}

// The inspection and dead-letter calls, built with bun, take odd names as
// data too.
func TestAdminWithOddName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	name := `o'r?ders"; \ $1 ?? DROP TABLE conveyor_events; --`
	tp, other := ps.Topic(name), ps.Topic("other")
	for _, x := range []pubsub.Topic{tp, other} {
		if err := x.Enqueue(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.Reject(ctx, dequeueWithin(t, x, 10*time.Second), errors.New("no")); err != nil {
			t.Fatal(err)
		}
	}
	s, err := admin.TopicStats(ctx, tp)
	if err != nil || s.Dead != 1 || s.Ready != 0 {
		t.Fatalf("Stats = %+v, %v; want 1 dead", s, err)
	}
	dead, err := admin.ListDead(ctx, tp, 10)
	if err != nil || len(dead) != 1 || dead[0].LastError != "no" {
		t.Fatalf("ListDead = %+v, %v", dead, err)
	}
	if err := admin.RequeueDead(ctx, tp, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := pubsub.Reject(ctx, dequeueWithin(t, tp, 10*time.Second), errors.New("no")); err != nil {
		t.Fatal(err)
	}
	if n, err := admin.PurgeDead(ctx, tp); err != nil || n != 1 {
		t.Fatalf("PurgeDead = %d, %v; want 1", n, err)
	}
	if n := countRows(t, db, "status = 'dead'"); n != 1 {
		t.Fatalf("%d dead rows left, want the other topic's 1", n)
	}
}

// Many processes enqueueing one key at once add one message; the key stays
// taken while the row is kept, finished rows included, and is free again
// once the row is pruned.
func TestEnqueueUniqueAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, db := newStore(t)
	one := newPubSub(t, db, dbpubsub.Options{Retention: time.Hour})
	two := newPubSub(t, openDB(t, dsn), dbpubsub.Options{})
	var wg sync.WaitGroup
	var added sync.Map
	for i := range 16 {
		ps := one
		if i%2 == 1 {
			ps = two
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := pubsub.EnqueueUnique(ctx, ps.Topic("tick"), "2026-11-29T12:00", fmt.Appendf(nil, "%d", i))
			if err != nil {
				t.Error(err)
			}
			if ok {
				added.Store(i, true)
			}
		}()
	}
	wg.Wait()
	n := 0
	added.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d of 16 concurrent EnqueueUnique calls added a message, want 1", n)
	}
	tp := one.Topic("tick")
	if err := dequeueWithin(t, tp, 10*time.Second).Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := one.Flush(ctx); err != nil { // the ack is queued: the UPDATE below needs it written
		t.Fatal(err)
	}
	if ok, err := pubsub.EnqueueUnique(ctx, tp, "2026-11-29T12:00", nil); ok || err != nil {
		t.Fatalf("EnqueueUnique of a finished key = %v, %v; want false until the row is pruned", ok, err)
	}
	if ok, err := pubsub.EnqueueUnique(ctx, one.Topic("other topic"), "2026-11-29T12:00", nil); !ok || err != nil {
		t.Fatalf("EnqueueUnique of the key on another topic = %v, %v; want true", ok, err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE conveyor_events SET finished_at = now() - interval '2 hours' WHERE status = 'finished'"); err != nil {
		t.Fatal(err)
	}
	if n, err := one.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if ok, err := pubsub.EnqueueUnique(ctx, tp, "2026-11-29T12:00", nil); !ok || err != nil {
		t.Fatalf("EnqueueUnique once pruned = %v, %v; want true", ok, err)
	}
	if _, err := pubsub.EnqueueUnique(ctx, tp, "", nil); err == nil {
		t.Fatal("EnqueueUnique with an empty key: no error")
	}
}

// A listener that can never connect (here a bad Options.ListenDSN; also a
// DB not on pgx's stdlib) turns LISTEN off: consumers poll, and nothing
// waits for it.
func TestListenerOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var logs syncbuf.Buffer
	opts := dbpubsub.Options{PollInterval: 100 * time.Millisecond, ListenDSN: "not a dsn ::", Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	tp := newPubSub(t, db, opts).Topic("t")
	start := time.Now()
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := dequeueWithin(t, tp, 10*time.Second).Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("first delivery took %v with the listener off", d)
	}
	if !strings.Contains(logs.String(), "LISTEN/NOTIFY is off") {
		t.Errorf("logs %q, want the listener's failure said", logs.String())
	}
	wantErrorKey(t, logs.String(), "LISTEN/NOTIFY is off")
}

// wantErrorKey checks that the JSON log records give their error under the
// key "error", as every package of conveyor does (event, the template
// app), so one query finds them all; and that the record with message msg
// has one.
func wantErrorKey(t *testing.T, logs, msg string) {
	t.Helper()
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, ok := rec["err"]; ok {
			t.Errorf("log record %q has the key \"err\", want \"error\"", line)
		}
		if s, _ := rec["error"].(string); s != "" && strings.Contains(fmt.Sprint(rec["msg"]), msg) {
			found = true
		}
	}
	if !found {
		t.Errorf("logs %q: want %q with its error under \"error\"", logs, msg)
	}
}

// Rows prefetched for a busy consumer wait in the buffer longer than the
// lease; their leases are renewed, so none is handed to anyone else or
// counted twice.
func TestBufferedLeasesAreRenewed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	const lease = time.Second // not less: a renewal late by a loaded machine would fail it
	ps := newPubSub(t, db, dbpubsub.Options{Lease: lease, Prefetch: 20})
	tp := ps.Topic("busy")
	const n = 30
	batch := make([][]byte, n)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "%d", i)
	}
	if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := dequeueWithin(t, tp, 10*time.Second)
		if string(m.Data()) != fmt.Sprint(i) || pubsub.Attempt(m) != 1 {
			t.Fatalf("got %q attempt %d, want %d attempt 1", m.Data(), pubsub.Attempt(m), i)
		}
		time.Sleep(75 * time.Millisecond) // 20 buffered rows wait 1.5 s, over the lease
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, ps)
	if got := countRows(t, db, "attempts <> 1 OR status <> 'finished'"); got != 0 {
		t.Fatalf("%d rows redelivered or unfinished", got)
	}
}

// A ctx that ends while the INSERT commits on the server does not make
// Enqueue report a plain failure for a message that was committed: the
// call succeeds, or fails before sending and added nothing, or returns
// its ctx's error wrapping ErrOutcomeUnknown (in doubt: at most one row).
func TestEnqueueCanceledWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	tp := newPubSub(t, db, dbpubsub.Options{}).Topic("slow")
	if err := tp.Enqueue(ctx, []byte("warm-up")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$`,
		// Deferred: it runs at commit, after the statement's reply was
		// sent, the moment where giving up makes a phantom.
		`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON conveyor_events
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_insert()`,
		`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON ` + dbpubsubtest.ReadyTable(t, db, "slow") + `
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_insert()`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i, enqueue := range []func(context.Context) error{
		func(ctx context.Context) error { return tp.Enqueue(ctx, []byte("mid")) },
		func(ctx context.Context) error { return pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("mid")}) },
		func(ctx context.Context) error {
			_, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("mid"))
			return err
		},
	} {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := enqueue(cctx)
		cancel()
		time.Sleep(500 * time.Millisecond) // let a commit in flight finish
		n := countRows(t, db, "data = 'mid'")
		t.Logf("call %d: %v, %d rows", i, err, n)
		if errors.Is(err, dbpubsub.ErrOutcomeUnknown) { // in doubt: sent, then its ctx ended
			if !errors.Is(err, context.DeadlineExceeded) || n > 1 {
				t.Fatalf("call %d: Enqueue with a ctx ending mid-INSERT returned %v and added %d rows", i, err, n)
			}
		} else if (err == nil) != (n == 1) || n > 1 {
			t.Fatalf("call %d: Enqueue with a ctx ending mid-INSERT returned %v and added %d rows", i, err, n)
		}
		for _, table := range []string{"conveyor_events", "conveyor_events_ready"} {
			if _, err := db.ExecContext(ctx, "DELETE FROM "+table+" WHERE data = 'mid'"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// wrapped is the thinnest middleware: the seed methods and Unwrap.
type wrapped struct{ pubsub.Topic }

func (w wrapped) Unwrap() pubsub.Topic { return w.Topic }

// Through a wrapping Topic, every enqueue still runs in the caller's
// transaction (WithTx travels in ctx, the abilities are found by
// pubsub.As): a rolled-back one is never delivered, a committed one is.
func TestWithTxThroughAWrapper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	tp := wrapped{newPubSub(t, db, dbpubsub.Options{}).Topic("wrapped")}
	write := func(commit bool, data string) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		txctx := dbpubsub.WithTx(ctx, tx)
		if err := tp.Enqueue(txctx, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.EnqueueBatch(txctx, tp, [][]byte{[]byte(data + " batch")}); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.EnqueueAt(txctx, tp, []byte(data+" at"), time.Now()); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write(false, "rolled back")
	write(true, "committed")
	got := map[string]bool{}
	for range 3 {
		m := dequeueWithin(t, tp, 10*time.Second)
		got[string(m.Data())] = true
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expectNone(t, tp, 300*time.Millisecond)
	if !got["committed"] || !got["committed batch"] || !got["committed at"] {
		t.Fatalf("delivered %v, want the three committed messages", got)
	}
}
