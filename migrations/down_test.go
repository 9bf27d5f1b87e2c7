package migrations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

// runFile runs the statements of one embedded migration file for the
// message table "jobs".
func runFile(t *testing.T, db *bun.DB, name string) {
	t.Helper()
	sqlText, err := files.ReadFile("sql/" + name)
	if err != nil {
		t.Fatal(err)
	}
	q := strings.NewReplacer("{{.Table}}", `"jobs"`, "{{.Prefix}}", "jobs").Replace(string(sqlText))
	ctx := context.Background()
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if strings.HasSuffix(name, ".down.sql") {
		// These tests look at what a down migration does to the messages:
		// past its refusal (TestDownRefusesWhileMessagesWait).
		if _, err := tx.ExecContext(ctx, `SET LOCAL conveyor.force_down = on`); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range strings.Split(q, "--bun:split") {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %s: %v", name, stmt, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// migratedJobs returns a DB on a fresh schema migrated for the message
// table "jobs".
func migratedJobs(t *testing.T) *bun.DB {
	t.Helper()
	_, db := pgtest.NewSchema(t)
	if err := Migrate(context.Background(), db, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, db *bun.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// The down migrations of the ready tables put the messages waiting there
// back into the message table, as pending, under their ids.
func TestReadyTableDownKeepsMessages(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO jobs_ready (topic, data) VALUES ('t', 'a'), ('t', 'b')`); err != nil {
		t.Fatal(err)
	}
	runFile(t, db, "0003_topic_ready_tables.tx.down.sql")
	runFile(t, db, "0002_ready_table.tx.down.sql")
	if n := count(t, db, `SELECT count(*) FROM jobs
		WHERE status = 'pending' AND topic = 't' AND data IN ('a', 'b') AND run_at = created_at`); n != 2 {
		t.Fatalf("%d of the 2 ready messages are pending in the message table after the down migrations", n)
	}
	if n := count(t, db, `SELECT count(*) FROM pg_class
		WHERE relnamespace = current_schema()::regnamespace
			AND (relname LIKE 'jobs\_ready%' OR relname IN ('jobs_all', 'jobs_topics'))`); n != 0 {
		t.Fatalf("%d of the ready tables, the registry and the view are still there", n)
	}
}

// Migration 0003 moves the rows waiting in the shared ready table to their
// topics' tables, and its down migration moves them back; a process older
// than 0003, which inserts into the shared table, has its rows routed to
// the topic's table.
func TestTopicReadyTablesMoveRows(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	// As an older process would.
	if _, err := db.ExecContext(ctx, `INSERT INTO jobs_ready (topic, data) VALUES ('a', '1'), ('b', '2'), ('a', '3')`); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if n := count(t, db, `SELECT count(*) FROM ONLY jobs_ready`); n != 0 {
			t.Errorf("%s: %d rows in the shared ready table itself, want 0", when, n)
		}
		for topic, want := range map[string]int{"a": 2, "b": 1} {
			var table string
			if err := db.DB.QueryRowContext(ctx, `SELECT jobs_ready_table($1)`, topic).Scan(&table); err != nil {
				t.Fatal(err)
			}
			if n := count(t, db, `SELECT count(*) FROM `+table+` WHERE topic = '`+topic+`'`); n != want {
				t.Errorf("%s: %d rows of topic %q in %s, want %d", when, n, topic, table, want)
			}
		}
		if n := count(t, db, `SELECT count(*) FROM jobs_all WHERE status = 'pending'`); n != 3 {
			t.Errorf("%s: the view shows %d pending messages, want 3", when, n)
		}
	}
	check("inserted into the shared table")

	runFile(t, db, "0003_topic_ready_tables.tx.down.sql")
	if n := count(t, db, `SELECT count(*) FROM ONLY jobs_ready`); n != 3 {
		t.Fatalf("after 0003's down migration, %d rows in the shared ready table, want 3", n)
	}
	runFile(t, db, "0003_topic_ready_tables.tx.up.sql")
	check("after 0003 down and up again")
}

// A topic's ready table is created once, whoever asks first; its name does
// not depend on the topic's spelling, and its rows can only be the topic's.
func TestReadyTableFunc(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	topic := `it's "a" topic; DROP TABLE jobs`
	// The first call's transaction is open while the second call comes.
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var a string
	var firstPID int
	if err := tx.QueryRowContext(ctx, `SELECT jobs_ready_table($1), pg_backend_pid()`, topic).Scan(&a, &firstPID); err != nil {
		t.Fatal(err)
	}
	second := make(chan string, 1)
	go func() {
		var name string
		if err := db.DB.QueryRowContext(ctx, `SELECT jobs_ready_table($1)`, topic).Scan(&name); err != nil {
			t.Error(err)
		}
		second <- name
	}()
	// The second call must be waiting on the first's registration, or the
	// test shows nothing.
	for deadline := time.Now().Add(10 * time.Second); count(t, db, fmt.Sprintf(`SELECT count(*) FROM pg_stat_activity
		WHERE %d = ANY (pg_blocking_pids(pid))`, firstPID)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the second call never waited on the first")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if b := <-second; a != b || a == "" {
		t.Fatalf("concurrent first calls gave %q and %q, want one table", a, b)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_topics`); n != 1 {
		t.Fatalf("%d topics registered, want 1", n)
	}
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO `+a+` (topic, data) VALUES ($1, 'x')`, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO `+a+` (topic, data) VALUES ('another', 'x')`); err == nil {
		t.Fatal("a row of another topic was accepted into the topic's ready table")
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_ready WHERE data = 'x'`); n != 1 {
		t.Fatalf("the ready table shows %d rows of the topic's, want 1", n)
	}
}

// An app whose role may only read and write the tables and call the
// ready-table function (the migrations ran as another) can use a new
// topic: its ready table is made with the migrations' rights and gets the
// grants of the shared ready table.
func TestReadyTableFuncForRestrictedRole(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "conveyor_app_" + hex.EncodeToString(b[:])
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.Background(), `RESET ROLE`)
		conn.Close()
	}()
	for _, q := range []string{
		`CREATE ROLE ` + role + ` NOLOGIN`,
		`GRANT USAGE ON SCHEMA ` + pgtestSchema(t, db) + ` TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, jobs_ready TO ` + role,
		`GRANT USAGE ON SEQUENCE jobs_id_seq TO ` + role,
		`GRANT EXECUTE ON FUNCTION jobs_ready_table(text) TO ` + role, // since 0006
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.DB.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	if _, err := conn.ExecContext(ctx, `SET ROLE `+role); err != nil {
		t.Fatal(err)
	}
	var table string
	if err := conn.QueryRowContext(ctx, `SELECT jobs_ready_table('new')`).Scan(&table); err != nil {
		t.Fatalf("a new topic's ready table, as a role without CREATE: %v", err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO `+table+` (topic, data) VALUES ('new', 'x')`); err != nil {
		t.Fatalf("insert into the new ready table as the app's role: %v", err)
	}
	// What dbpubsub reads to give a batch one block of ids (0004), and
	// such an insert.
	var inc int
	if err := conn.QueryRowContext(ctx, `SELECT seqincrement FROM pg_catalog.pg_sequence
		WHERE seqrelid = pg_catalog.pg_get_serial_sequence('jobs', 'id')::regclass`).Scan(&inc); err != nil || inc != 1024 {
		t.Fatalf("the id sequence's increment, as the app's role: %d, %v; want 1024", inc, err)
	}
	if _, err := conn.ExecContext(ctx, `WITH b AS (SELECT nextval('jobs_id_seq') AS first)
		INSERT INTO `+table+` (id, topic, data) SELECT b.first + u.n - 1, 'new', u.d FROM b, unnest('{y,z}'::bytea[]) WITH ORDINALITY AS u(d, n)`); err != nil {
		t.Fatalf("insert with a block of ids as the app's role: %v", err)
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM `+table); err != nil {
		t.Fatalf("delete from the new ready table as the app's role: %v", err)
	}
}

func pgtestSchema(t *testing.T, db *bun.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRowContext(context.Background(), `SELECT current_schema()`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Migration 0004 makes each nextval of the id sequence reserve a block of
// 1024 ids; its down migration goes back to one id per nextval without
// handing out again an id of a block already taken.
func TestIDBlocksDown(t *testing.T) {
	db := migratedJobs(t)
	const seq = `pg_get_serial_sequence('jobs', 'id')`
	increment := func() int {
		return count(t, db, `SELECT seqincrement FROM pg_sequence WHERE seqrelid = `+seq+`::regclass`)
	}
	if got := increment(); got != 1024 {
		t.Fatalf("increment %d after the migrations, want 1024", got)
	}
	taken := count(t, db, `SELECT nextval(`+seq+`)`) // a batch may use up to taken+1023
	runFile(t, db, "0004_id_blocks.tx.down.sql")
	if got := increment(); got != 1 {
		t.Fatalf("increment %d after 0004's down migration, want 1", got)
	}
	if next := count(t, db, `SELECT nextval(`+seq+`)`); next <= taken+1023 {
		t.Fatalf("nextval %d after 0004's down migration, inside the block of %d taken before", next, taken)
	}
	runFile(t, db, "0004_id_blocks.tx.up.sql")
	if got := increment(); got != 1024 {
		t.Fatalf("increment %d after 0004 down and up again, want 1024", got)
	}
}

// Every migration has a down migration, and running them all, newest
// first, leaves only the migrations' own tables; running the up
// migrations again gives the schema Migrate gave.
func TestEveryMigrationDownAndUp(t *testing.T) {
	db := migratedJobs(t)
	entries, err := files.ReadDir("sql")
	if err != nil {
		t.Fatal(err)
	}
	var ups []string
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
		if base, ok := strings.CutSuffix(e.Name(), ".up.sql"); ok {
			ups = append(ups, base)
		}
	}
	for _, base := range ups {
		if !names[base+".down.sql"] {
			t.Fatalf("migration %s has no down migration", base)
		}
	}
	const objects = `SELECT count(*) FROM pg_class
		WHERE relnamespace = current_schema()::regnamespace AND relname NOT LIKE 'jobs\_migration%'`
	wantObjects := count(t, db, objects)
	wantDef, wantACL := functionState(t, db)

	for i := len(ups) - 1; i >= 0; i-- {
		runFile(t, db, ups[i]+".down.sql")
	}
	if n := count(t, db, objects) + count(t, db, `SELECT count(*) FROM pg_proc
		WHERE pronamespace = current_schema()::regnamespace`); n != 0 {
		t.Fatalf("%d tables, indexes, views, sequences or functions left after every down migration", n)
	}
	for _, base := range ups {
		runFile(t, db, base+".up.sql")
	}
	if n := count(t, db, objects); n != wantObjects {
		t.Errorf("%d tables, indexes, views and sequences after down and up again, want %d", n, wantObjects)
	}
	if def, acl := functionState(t, db); def != wantDef || acl != wantACL {
		t.Errorf("the ready-table function after down and up again is\n%s\n%s\nwant\n%s\n%s", def, acl, wantDef, wantACL)
	}
}

// Migration 0007 gives the message table and every topic's ready table,
// those made before it and after, a headers column; the claim moves a
// ready row's header with it, and the view shows it. Its down migration
// takes the column away from all of them and leaves the view usable.
func TestHeadersOnEveryReadyTable(t *testing.T) {
	db := migratedJobs(t)
	hasHeaders := func(table string) bool {
		t.Helper()
		return count(t, db, `SELECT count(*) FROM pg_attribute
			WHERE attrelid = '`+table+`'::regclass AND attname = 'headers' AND NOT attisdropped`) == 1
	}
	readyTable := func(topic string) string {
		t.Helper()
		var name string
		if err := db.DB.QueryRowContext(context.Background(), `SELECT jobs_ready_table($1)`, topic).Scan(&name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	runFile(t, db, "0007_headers.tx.down.sql")
	before := readyTable("before")
	exec(t, db, `INSERT INTO `+before+` (topic, data) VALUES ('before', 'old')`)
	runFile(t, db, "0007_headers.tx.up.sql")
	after := readyTable("after")
	for _, table := range []string{"jobs", "jobs_ready", before, after} {
		if !hasHeaders(table) {
			t.Fatalf("%s has no headers column after 0007", table)
		}
	}
	exec(t, db,
		`INSERT INTO `+after+` (topic, data, headers) VALUES ('after', 'new', '{"tenant": "acme"}')`,
		`INSERT INTO jobs (topic, data, headers) VALUES ('after', 'delayed', '{"k": "v"}')`)
	if n := count(t, db, `SELECT count(*) FROM jobs_all
		WHERE headers->>'tenant' = 'acme' OR headers->>'k' = 'v' OR (data = 'old' AND headers IS NULL)`); n != 3 {
		t.Fatalf("the view shows %d of the 3 rows with their headers, want 3", n)
	}
	runFile(t, db, "0007_headers.tx.down.sql")
	for _, table := range []string{"jobs", "jobs_ready", before, after} {
		if hasHeaders(table) {
			t.Fatalf("%s keeps a headers column after 0007's down migration", table)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_all`); n != 3 {
		t.Fatalf("the view after 0007's down migration shows %d rows, want 3", n)
	}
	runFile(t, db, "0007_headers.tx.up.sql")
	if !hasHeaders(before) || !hasHeaders(readyTable("later")) {
		t.Fatal("no headers column after 0007 down and up again")
	}
}

// Run by hand (psql, bun's migrator), the down migrations that move or
// drop where messages are kept, or what they hold, refuse while a message
// is not finished, with SQLSTATE CVD01 (Down's ErrNotEmpty), unless
// conveyor.force_down is on; the others run. Finished rows do not count.
func TestDownGuards(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	exec(t, db, `INSERT INTO jobs (topic, data, status, finished_at) VALUES ('t', 'done', 'finished', now())`)
	exec(t, db, `INSERT INTO jobs (topic, data, status) VALUES ('t', 'dead', 'dead')`)
	guarded := map[string]bool{"0001_create_events": true, "0002_ready_table": true, "0003_topic_ready_tables": true,
		"0005_subscriptions": true, "0007_headers": true}
	names := []string{"0009_subscription_retry", "0008_pause", "0007_headers", "0006_ready_table_privileges", "0005_subscriptions",
		"0004_id_blocks", "0003_topic_ready_tables", "0002_ready_table", "0001_create_events"}
	for _, name := range names {
		sqlText, err := files.ReadFile("sql/" + name + ".tx.down.sql")
		if err != nil {
			t.Fatal(err)
		}
		q := strings.NewReplacer("{{.Table}}", `"jobs"`, "{{.Prefix}}", "jobs").Replace(string(sqlText))
		first := strings.Split(q, "--bun:split")[0]
		tx, err := db.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, first)
		_ = tx.Rollback()
		switch {
		case guarded[name] && sqlState(err) != refusedState:
			t.Errorf("%s's first statement with a dead message kept: %v, want SQLSTATE %s", name, err, refusedState)
		case !guarded[name] && err != nil:
			t.Errorf("%s's first statement: %v", name, err)
		}
		runFile(t, db, name+".tx.down.sql") // forced
	}
}
