package dbpubsub

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

func TestChannelName(t *testing.T) {
	long := strings.Repeat("x", pubsub.MaxTopicNameLen)
	names := map[string]bool{}
	for _, c := range []struct{ qualified, topic string }{
		{"public.conveyor_events", "orders"},
		{"other.conveyor_events", "orders"}, // another schema: another channel
		{"public.jobs", "orders"},
		{"public.conveyor_events", "refunds"},
		{"public.conveyor_events", long},
	} {
		ch := channelName(c.qualified, c.topic)
		if len(ch) > 63 {
			t.Errorf("channel %q of %+v is %d bytes, PostgreSQL keeps 63", ch, c, len(ch))
		}
		if names[ch] {
			t.Errorf("channel %q given twice", ch)
		}
		names[ch] = true
	}
}

// The rescue statement computes channels in SQL; they must be the ones
// LISTENed to.
func TestChannelNameMatchesSQL(t *testing.T) {
	_, db := pgtest.NewSchema(t)
	for _, topic := range []string{"orders", `o'rders"; --`, "名前"} {
		var got string
		err := db.DB.QueryRowContext(context.Background(), "SELECT $1::text || md5($2::text || ':' || $3::text)",
			channelPrefix, "s.t", topic).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if want := channelName("s.t", topic); got != want {
			t.Errorf("topic %q: SQL says %q, Go says %q", topic, got, want)
		}
	}
}

// The statements that find delivered rows by an array of ids must look
// each one up in the primary key, also in the generic plan of a prepared
// statement (which pgx's statement cache gets): a scan of the lease index
// reads every row leased in the last lease period. The claim must scan
// neither table.
func TestByIDStatementsUsePrimaryKey(t *testing.T) {
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var ready string
	if err := db.QueryRowContext(ctx, `SELECT conveyor_events_ready_table('t')`).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	// Statistics taken while few rows are leased make the lease index
	// look cheap.
	for _, q := range []string{
		`INSERT INTO conveyor_events (topic, data) SELECT 't', '\x00' FROM generate_series(1, 20000)`,
		`UPDATE conveyor_events SET status = 'processing', lease_until = now() + interval '30 s' WHERE id <= 50`,
		`INSERT INTO ` + ready + ` (topic, data) SELECT 't', '\x00' FROM generate_series(1, 20000)`,
		`ANALYZE conveyor_events`,
		`ANALYZE ` + ready,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	st := newStatements("conveyor_events")
	for _, c := range []struct{ name, sql, args string }{
		{"settle", st.settle, `'{1,2}', '{1,1}', '{finished,pending}', '{0,1000}', '{"",""}'`},
		{"renew", st.renew, `'{1,2}', '{1,1}', 30000000`},
		{"release", st.release, `'{1,2}', '{1,1}', 'ch'`},
		{"claim", newReadyStatements("conveyor_events", ready, "public.conveyor_events_id_seq").claim, `'t', 128, 30000000, 0`},
	} {
		if _, err := conn.ExecContext(ctx, "PREPARE "+c.name+" AS "+c.sql); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := explain(ctx, t, conn, "EXPLAIN EXECUTE "+c.name+"("+c.args+")")
		if c.name == "claim" {
			// Both tables' rows are found by index, never by a scan of
			// either table (a join to the rows taken hashed all of them).
			if strings.Contains(p, "Seq Scan") || !strings.Contains(p, ready[strings.LastIndexByte(ready, '.')+1:]+"_pkey") {
				t.Errorf("claim: generic plan\n%s\nwant no sequential scan", p)
			}
			continue
		}
		if !strings.Contains(p, "conveyor_events_pkey") || strings.Contains(p, "lease_idx") {
			t.Errorf("%s: generic plan\n%s\nwant the rows looked up by primary key, not the lease index", c.name, p)
		}
	}
}

// The plans a session keeps for its prepared statements were made while
// the message table was small; once rows it held few of have arrived
// (finished and dead ones here) with no ANALYZE since, those plans scan
// the whole table. A PubSub analyzes the table when the server counts more
// rows changed than it held at the last analysis, which makes every
// session plan again: each hot statement then finds its rows by an index.
// Statements planned afresh over the stale statistics do too. Autovacuum
// is off for the table: only the PubSub can analyze it.
func TestHotStatementsAvoidSeqScanAfterGrowth(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var ready string
	if err := db.QueryRowContext(ctx, `SELECT conveyor_events_ready_table('t')`).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	exec := func(c *sql.Conn, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	conn := func() *sql.Conn {
		t.Helper()
		c, err := db.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	st := newStatements("conveyor_events")
	hot := []struct{ name, sql, args string }{
		{"claim", newReadyStatements("conveyor_events", ready, "public.conveyor_events_id_seq").claim, `'t', 128, 30000000, 0`},
		{"settle", st.settle, `'{1,2}', '{1,1}', '{finished,pending}', '{0,1000}', '{"",""}'`},
		{"extend", st.extend, `1, 1, 30000000`},
		{"renew", st.renew, `'{1,2}', '{1,1}', 30000000`},
		{"release", st.release, `'{1,2}', '{1,1}', 'ch'`},
		{"nextRunAt", st.nextRunAt, `'t'`},
		{"rescue", st.rescue, `1000, 25, 'ch', 'conveyor_events'`},
		{"prune", st.prune, `86400000000, 1000`},
	}
	// prepare prepares the hot statements in session c, generic plans
	// forced (as PostgreSQL chooses for pgx's prepared statements after
	// five executions), and plans them.
	prepare := func(c *sql.Conn) {
		t.Helper()
		exec(c, "SET plan_cache_mode = force_generic_plan")
		for _, h := range hot {
			exec(c, "PREPARE "+h.name+" AS "+h.sql)
			explain(ctx, t, c, "EXPLAIN EXECUTE "+h.name+"("+h.args+")")
		}
	}
	// check fails t for each statement whose plan in c scans the
	// message table.
	check := func(c *sql.Conn, when string) {
		t.Helper()
		for _, h := range hot {
			if p := explain(ctx, t, c, "EXPLAIN EXECUTE "+h.name+"("+h.args+")"); strings.Contains(p, "Seq Scan on conveyor_events ") {
				t.Errorf("%s, %s: generic plan\n%s\nwant no sequential scan of the message table", h.name, when, p)
			}
		}
	}

	// The plans are made while the table holds a few rows, analyzed.
	old := conn()
	exec(old, `ALTER TABLE conveyor_events SET (autovacuum_enabled = false)`,
		`INSERT INTO conveyor_events (topic, data, run_at) SELECT 't', '\x00', now() + interval '1 hour' FROM generate_series(1, 10)`,
		`ANALYZE conveyor_events`)
	prepare(old)

	// Then many finished and dead rows arrive, and a few due and leased
	// ones; the server's counters of the table are made current.
	w := conn()
	exec(w,
		`INSERT INTO conveyor_events (topic, data, status, run_at, finished_at)
			SELECT 't', '\x00', s, now(), now() FROM generate_series(1, 20000), unnest('{finished,dead}'::text[]) AS s`,
		`INSERT INTO conveyor_events (topic, data) SELECT 't', '\x00' FROM generate_series(1, 100)`,
		`INSERT INTO conveyor_events (topic, data, status, lease_until, attempts, token)
			SELECT 't', '\x00', 'processing', now() + interval '1 minute', 1, 1 FROM generate_series(1, 100)`,
		`SELECT pg_stat_force_next_flush()`)
	exec(w, `SELECT 1`)

	fresh := conn()
	prepare(fresh)
	check(fresh, "planned over stale statistics")

	ps, err := New(db, Options{NoListen: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT analyze_count FROM pg_stat_user_tables
			WHERE relid = 'conveyor_events'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 1 || time.Now().After(deadline) {
			break // checked below: without the PubSub's analysis the old plans stay
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(old, "planned before the rows arrived")
}

// explain runs the EXPLAIN q in c and returns the plan.
func explain(ctx context.Context, t *testing.T, c *sql.Conn, q string) string {
	t.Helper()
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}
