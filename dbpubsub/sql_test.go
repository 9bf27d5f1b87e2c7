package dbpubsub

import (
	"context"
	"strings"
	"testing"

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
		rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE "+c.name+"("+c.args+")")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		p := plan.String()
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
