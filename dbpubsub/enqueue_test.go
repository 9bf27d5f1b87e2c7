package dbpubsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// groupFixture is a topic whose group statements the test holds up: while
// held, every enqueue outside a transaction queues, as if statements were
// in flight; release lets the first queued call lead, with all the others.
type groupFixture struct {
	t   *testing.T
	ctx context.Context
	db  *bun.DB
	tp  groupTopic
}

// groupTopic enqueues through one publisher, the store's side of a
// handle, whose group the test holds up; the header and the transaction
// come from ctx, as the engine gives them.
type groupTopic struct{ *publisher }

func out(ctx context.Context, data []byte) driver.Outgoing {
	h, _ := wrap.HeaderFrom(ctx)
	return driver.Outgoing{Data: data, Header: h, Tx: driver.TxFrom(ctx)}
}

func (t groupTopic) Enqueue(ctx context.Context, data []byte) error {
	_, err := t.Publish(ctx, nil, out(ctx, data))
	return err
}

func (t groupTopic) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	m := out(ctx, data)
	m.At = at
	_, err := t.Publish(ctx, nil, m)
	return err
}

func (t groupTopic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	m := out(ctx, data)
	m.Key = key
	return t.Publish(ctx, nil, m)
}

func (t groupTopic) EnqueueBatch(ctx context.Context, data [][]byte) error {
	m := out(ctx, nil)
	return t.PublishBatch(ctx, nil, driver.Batch{Data: data, Header: m.Header, Tx: m.Tx})
}

func newGroupFixture(t *testing.T) *groupFixture {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	_, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := New(db, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	f := &groupFixture{t: t, ctx: ctx, db: db, tp: groupTopic{ps.s.Topic("group").(*publisher)}}
	if err := f.tp.Enqueue(ctx, []byte("warm-up")); err != nil { // looks the table up
		t.Fatal(err)
	}
	return f
}

// readyTable is the name of the fixture topic's ready table.
func (f *groupFixture) readyTable() string {
	f.t.Helper()
	m, err := f.tp.pub.lookup(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return m.ready
}

func (f *groupFixture) exec(q string) {
	f.t.Helper()
	if _, err := f.db.DB.ExecContext(f.ctx, q); err != nil {
		f.t.Fatal(err)
	}
}

func (f *groupFixture) hold() {
	g := &f.tp.enq
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leaders != 0 {
		f.t.Fatalf("%d statements in flight, want none", g.leaders)
	}
	g.leaders = enqueueStatements
}

func (f *groupFixture) release() {
	f.tp.enq.handOff()
	f.waitQueued(0) // taken by the leader
	for range enqueueStatements - 1 {
		f.tp.enq.handOff()
	}
}

// waitQueued returns once n calls are queued.
func (f *groupFixture) waitQueued(n int) {
	f.t.Helper()
	for {
		f.tp.enq.mu.Lock()
		got := len(f.tp.enq.queue)
		f.tp.enq.mu.Unlock()
		if got == n {
			return
		}
		if f.ctx.Err() != nil {
			f.t.Fatalf("%d calls queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// rows returns the payloads of the topic in id order.
func (f *groupFixture) rows() []string {
	f.t.Helper()
	rows, err := f.db.DB.QueryContext(f.ctx, `SELECT data FROM conveyor_events_all WHERE topic = 'group' AND data <> 'warm-up' ORDER BY id`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			f.t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return got
}

type groupCall struct {
	name string
	call func(ctx context.Context) error
}

// start runs calls concurrently, each once the previous one is queued, and
// returns their errors by name once all have returned.
func (f *groupFixture) start(queued int, calls []groupCall) func() map[string]error {
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(calls))
	for i, c := range calls {
		go func() { results <- result{c.name, c.call(f.ctx)} }()
		f.waitQueued(queued + i + 1)
	}
	return func() map[string]error {
		errs := map[string]error{}
		for range calls {
			r := <-results
			errs[r.name] = r.err
		}
		return errs
	}
}

// Calls made while a statement is in flight are written by the next one,
// in the order they came, each batch in one piece; a call whose ctx ends
// while it waits adds nothing.
func TestEnqueueGroupsConcurrentCalls(t *testing.T) {
	f := newGroupFixture(t)
	f.exec(`CREATE TABLE statements (n int)`)
	f.exec(`CREATE FUNCTION count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO statements VALUES (1); RETURN NULL; END $$`)
	for _, table := range []string{"conveyor_events", f.readyTable()} {
		f.exec(`CREATE TRIGGER count_statement AFTER INSERT ON ` + table + `
			FOR EACH STATEMENT EXECUTE FUNCTION count_statement()`)
	}

	f.hold()
	later := time.Now().Add(time.Hour)
	cctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	canceled := make(chan error, 1)
	go func() { canceled <- f.tp.Enqueue(cctx, []byte("canceled")) }()
	f.waitQueued(1)
	wait := f.start(1, []groupCall{
		{"s-0", func(ctx context.Context) error { return f.tp.Enqueue(ctx, []byte("s-0")) }},
		{"batch", func(ctx context.Context) error {
			return f.tp.EnqueueBatch(ctx, [][]byte{[]byte("b-0"), []byte("b-1"), []byte("b-2")})
		}},
		{"delayed", func(ctx context.Context) error { return f.tp.EnqueueAt(ctx, []byte("delayed"), later) }},
		{"s-1", func(ctx context.Context) error { return f.tp.Enqueue(ctx, []byte("s-1")) }},
	})
	cancel()
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Errorf("Enqueue whose ctx ended while queued: %v, want context.Canceled", err)
	}
	f.waitQueued(4)
	f.release()
	for name, err := range wait() {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	want := []string{"s-0", "b-0", "b-1", "b-2", "delayed", "s-1"}
	if got := f.rows(); !slices.Equal(got, want) {
		t.Errorf("rows in id order %q, want %q", got, want)
	}
	var statements int
	if err := f.db.DB.QueryRowContext(f.ctx, `SELECT count(*) FROM statements`).Scan(&statements); err != nil {
		t.Fatal(err)
	}
	if statements != 1 {
		t.Errorf("the queued calls took %d statements, want 1", statements)
	}
	var delayed bool
	if err := f.db.DB.QueryRowContext(f.ctx, `SELECT run_at > now() + interval '59 minutes'
		FROM conveyor_events WHERE data = 'delayed'`).Scan(&delayed); err != nil {
		t.Fatal(err)
	}
	if !delayed {
		t.Error("EnqueueAt an hour ahead, grouped: the row is not delayed")
	}
}

// A call whose rows the database rejects fails alone: the calls it shared
// a statement with are written.
func TestEnqueueGroupRejectedRows(t *testing.T) {
	f := newGroupFixture(t)
	f.exec(`CREATE FUNCTION reject_bad() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.data = 'bad' THEN RAISE EXCEPTION 'bad payload'; END IF; RETURN NEW; END $$`)
	for _, table := range []string{"conveyor_events", f.readyTable()} {
		f.exec(`CREATE TRIGGER reject_bad BEFORE INSERT ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION reject_bad()`)
	}

	f.hold()
	var calls []groupCall
	for _, name := range []string{"ok-0", "bad", "ok-1"} {
		calls = append(calls, groupCall{name, func(ctx context.Context) error { return f.tp.Enqueue(ctx, []byte(name)) }})
	}
	calls = append(calls,
		groupCall{"batch with bad", func(ctx context.Context) error {
			return f.tp.EnqueueBatch(ctx, [][]byte{[]byte("x-0"), []byte("bad"), []byte("x-1")})
		}},
		groupCall{"batch", func(ctx context.Context) error {
			return f.tp.EnqueueBatch(ctx, [][]byte{[]byte("b-0"), []byte("b-1")})
		}})
	wait := f.start(0, calls)
	f.release()
	for name, err := range wait() {
		var pgErr *pgconn.PgError
		switch {
		case name == "bad" || name == "batch with bad":
			if !errors.As(err, &pgErr) || pgErr.Message != "bad payload" {
				t.Errorf("%s: %v, want the trigger's error", name, err)
			}
		case err != nil:
			t.Errorf("%s, grouped with rejected rows: %v", name, err)
		}
	}
	if got, want := f.rows(), []string{"ok-0", "ok-1", "b-0", "b-1"}; !slices.Equal(got, want) {
		t.Errorf("rows in id order %q, want %q", got, want)
	}
}

// A batch too big to share a statement does not wait for the group's, and
// its rows take ids in the order given.
func TestEnqueueBigBatchAlone(t *testing.T) {
	f := newGroupFixture(t)
	f.hold()
	defer f.release()
	batch := make([][]byte, 1000)
	want := make([]string, len(batch))
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "%d", i)
		want[i] = string(batch[i])
	}
	if err := f.tp.EnqueueBatch(f.ctx, batch); err != nil {
		t.Fatalf("EnqueueBatch of %d while a group statement is in flight: %v", len(batch), err)
	}
	if got := f.rows(); !slices.Equal(got, want) {
		t.Errorf("%d rows stored, want the %d of the batch in id order (first rows %q)", len(got), len(batch), got[:min(len(got), 5)])
	}
}

// A batch that the server does not finish within StatementTimeout is
// canceled on the server: the call fails with the deadline and adds
// nothing (the statement does not go on to commit behind the caller's
// back), and the topic goes on working.
func TestEnqueueBatchStatementTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, _ := pgtest.NewSchema(t)
	db, err := Open(dsn) // dbpubsub's own configuration of pgx
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := New(db, Options{StatementTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	f := &groupFixture{t: t, ctx: ctx, db: db, tp: groupTopic{ps.s.Topic("group").(*publisher)}}
	f.exec(`CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(4); RETURN NULL; END $$`)
	f.exec(`CREATE TRIGGER slow BEFORE INSERT ON ` + f.readyTable() + ` FOR EACH STATEMENT EXECUTE FUNCTION slow()`)

	batch := make([][]byte, maxCallRows+1) // a statement of its own
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "slow-%d", i)
	}
	if err := f.tp.EnqueueBatch(ctx, batch); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EnqueueBatch past StatementTimeout: %v, want context.DeadlineExceeded", err)
	}
	// Wait for the statement to end on the server, however it ends (only
	// its text names this test's schema).
	for {
		var n int
		if err := db.DB.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0`, f.readyTable()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the INSERT still runs on the server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := f.rows(); len(got) != 0 {
		t.Errorf("%d rows of the batch that failed on StatementTimeout stored, want none", len(got))
	}
	f.exec(`DROP TRIGGER slow ON ` + f.readyTable())
	for i := range 10 { // every connection of the pool is usable
		if err := f.tp.EnqueueBatch(ctx, batch); err != nil {
			t.Fatalf("EnqueueBatch %d after a canceled one: %v", i, err)
		}
	}
	if got := f.rows(); len(got) != 10*len(batch) {
		t.Errorf("%d rows after the canceled batch, want %d", len(got), 10*len(batch))
	}
}
