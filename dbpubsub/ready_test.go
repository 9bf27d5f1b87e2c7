package dbpubsub_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// ackedData dequeues n messages of tp, acks each, and returns their
// payloads in the order they came.
func ackedData(ctx context.Context, t *testing.T, tp pubsub.Topic, n int) []string {
	t.Helper()
	got := make([]string, 0, n)
	for len(got) < n {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatalf("Dequeue after %d of %d: %v", len(got), n, err)
		}
		got = append(got, string(m.Data()))
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// A message enqueued for now waits in the ready table; the claim moves it
// into the message table under the same id, and a retry waits there.
func TestReadyRowsMoveOnClaim(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Retry: pubsub.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}})
	tp := ps.Topic("move")
	if err := tp.Enqueue(ctx, []byte("now")); err != nil {
		t.Fatal(err)
	}
	var readyID int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM conveyor_events_ready WHERE data = 'now'`).Scan(&readyID); err != nil {
		t.Fatalf("the message enqueued for now is not in the ready table: %v", err)
	}
	if n := countMain(t, db, "true"); n != 0 {
		t.Fatalf("%d rows in the message table before any claim, want 0", n)
	}

	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != strconv.FormatInt(readyID, 10) || string(m.Data()) != "now" {
		t.Fatalf("Dequeue = %s %q, want %d %q", m.ID(), m.Data(), readyID, "now")
	}
	if n := countRows(t, db, "true"); n != 1 {
		t.Fatalf("%d rows in all after the claim, want 1 (moved, not copied)", n)
	}
	if n := countMain(t, db, fmt.Sprintf("id = %d AND status = 'processing' AND attempts = 1", readyID)); n != 1 {
		t.Fatal("the claimed row is not in the message table as processing, attempt 1")
	}
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	m, err = tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != strconv.FormatInt(readyID, 10) || pubsub.Attempt(m) != 2 {
		t.Fatalf("redelivery = %s attempt %d, want %d attempt 2", m.ID(), pubsub.Attempt(m), readyID)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	flush(t, ps)
	if n := countMain(t, db, fmt.Sprintf("id = %d AND status = 'finished'", readyID)); n != 1 {
		t.Fatal("the acked row is not finished in the message table")
	}
}

// One claim takes both kinds of rows: pending rows of the message table
// (delayed, retried) and the ready table's, each once.
func TestClaimTakesBothTables(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{ClaimBatch: 8})
	tp := ps.Topic("both")
	want := map[string]bool{}
	for i := range 10 {
		d := fmt.Sprint("at-", i)
		if err := pubsub.EnqueueAt(ctx, tp, []byte(d), time.Now().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		want[d] = true
		d = fmt.Sprint("now-", i)
		if err := tp.Enqueue(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
		want[d] = true
	}
	if n := countMain(t, db, "status = 'pending'"); n != 10 {
		t.Fatalf("%d pending rows in the message table, want the 10 enqueued with a time", n)
	}
	for _, d := range ackedData(ctx, t, tp, len(want)) {
		if !want[d] {
			t.Fatalf("got %q twice or unexpectedly", d)
		}
		delete(want, d)
	}
	flush(t, ps)
	if n := countRows(t, db, "status <> 'finished'"); n != 0 {
		t.Fatalf("%d rows unfinished, want 0", n)
	}
}

// A message whose transaction commits after later ones were claimed (its
// id is below the claim's floor) is delivered all the same.
func TestLateCommitBelowFloor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{ClaimBatch: 4})
	tp := ps.Topic("late")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tp.Enqueue(dbpubsub.WithTx(ctx, tx), []byte("late")); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := tp.Enqueue(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("the message committed late never came: %v", err)
	}
	if string(m.Data()) != "late" {
		t.Fatalf("got %q, want %q", m.Data(), "late")
	}
}

// A PubSub analyzes the young message table once its claims have moved
// 1,000 rows into it, so that PostgreSQL drops the plans it made while the
// table was empty (see maintenance.go), with the small statistics target
// that is enough for that. Autovacuum is off for the table here: only the
// PubSub can do it.
func TestYoungTableIsAnalyzed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	if _, err := db.ExecContext(ctx, `ALTER TABLE conveyor_events SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic("young")
	batch := make([][]byte, 100)
	for i := range batch {
		batch[i] = []byte("x")
	}
	analyzed := func() (n int64) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT analyze_count FROM pg_stat_user_tables
			WHERE relid = 'conveyor_events'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := 0; i < 1100; i++ {
		if i%100 == 0 {
			if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
				t.Fatal(err)
			}
		}
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 850 && analyzed() != 0 { // 900 enqueued so far
			t.Fatal("the table was analyzed before 1,000 rows moved into it")
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for analyzed() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the message table was not analyzed after 1,100 rows moved into it")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A histogram of 1,100 distinct ids has target + 1 bounds: 101 with
	// the server's default target, 11 with the PubSub's.
	// The statistics are committed with the analysis, which the counter
	// may show a moment before.
	var bounds int
	for {
		err := db.QueryRowContext(ctx, `SELECT array_length(histogram_bounds::text::bigint[], 1) FROM pg_stats
			WHERE schemaname = current_schema() AND tablename = 'conveyor_events' AND attname = 'id'`).Scan(&bounds)
		if err == nil {
			break
		}
		if !errors.Is(err, sql.ErrNoRows) || time.Now().After(deadline) {
			t.Fatalf("the statistics of the analysis: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if bounds != dbpubsub.AnalyzeTarget+1 {
		t.Errorf("the analysis left %d histogram bounds for id, want %d (statistics target %d)",
			bounds, dbpubsub.AnalyzeTarget+1, dbpubsub.AnalyzeTarget)
	}
}

// Each topic's ready messages wait in a table of their own; a row that a
// process older than migration 0003 inserts into the shared ready table is
// routed to its topic's table and delivered.
func TestTopicsHaveReadyTablesOfTheirOwn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	a, b := ps.Topic("a"), ps.Topic("b")
	if err := pubsub.EnqueueBatch(ctx, a, [][]byte{[]byte("a1"), []byte("a2")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, []byte("b1")); err != nil {
		t.Fatal(err)
	}
	tableA, tableB := dbpubsubtest.ReadyTable(t, db, "a"), dbpubsubtest.ReadyTable(t, db, "b")
	if tableA == tableB {
		t.Fatalf("topics a and b share the ready table %s", tableA)
	}
	for table, want := range map[string]string{tableA: "a1,a2", tableB: "b1"} {
		var got string
		if err := db.QueryRowContext(ctx, `SELECT string_agg(convert_from(data, 'UTF8'), ',' ORDER BY id) FROM `+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s holds %q, want %q", table, got, want)
		}
	}

	// As a process older than migration 0003 enqueues.
	if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events_ready (topic, data) VALUES ('b', 'old')`); err != nil {
		t.Fatal(err)
	}
	got := ackedData(ctx, t, b, 2)
	slices.Sort(got)
	if !slices.Equal(got, []string{"b1", "old"}) {
		t.Fatalf("topic b delivered %q, want b1 and old", got)
	}
}

// A schema without migration 0003 is reported as not migrated, naming
// what to run.
func TestWithoutTopicReadyTablesNotMigrated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, db := newStore(t)
	if _, err := db.ExecContext(ctx, `DROP FUNCTION conveyor_events_ready_table(text)`); err != nil {
		t.Fatal(err)
	}
	tp := newPubSub(t, db, dbpubsub.Options{}).Topic("t")
	for name, call := range map[string]func() error{
		"Enqueue": func() error { return tp.Enqueue(ctx, []byte("x")) },
		"Dequeue": func() error { _, err := tp.Dequeue(ctx); return err },
	} {
		err := call()
		if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "0003") {
			t.Errorf("%s: %v, want ErrNotMigrated naming migration 0003", name, err)
		}
	}
}
