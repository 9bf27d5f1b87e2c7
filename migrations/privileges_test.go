package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

// newRole creates a role of its own for t (attrs such as "LOGIN") and
// drops it, with what it owns and was granted, when t ends.
func newRole(t *testing.T, db *bun.DB, attrs string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "conveyor_test_" + hex.EncodeToString(b[:])
	if _, err := db.DB.ExecContext(context.Background(), `CREATE ROLE `+role+` `+attrs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.DB.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return role
}

// asRole returns a connection of db's whose session runs as role. The
// session is closed, not returned to the pool, when t ends, so its role
// and temporary tables go with it (before newRole's clean-up).
func asRole(t *testing.T, db *bun.DB, role string) *sql.Conn {
	t.Helper()
	conn, err := db.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	})
	if _, err := conn.ExecContext(context.Background(), `SET ROLE `+role); err != nil {
		t.Fatal(err)
	}
	return conn
}

func exec(t *testing.T, db *bun.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// A role that may log in and nothing more (with USAGE on the schema, as
// every role has on public) cannot call the ready-table function, which
// runs with the migrations' rights. And a role that may call it cannot, by
// shadowing the registry with a temporary table, make it create a table
// of its choosing: the one the app's next new topic would get.
func TestReadyTableFuncUnprivilegedRole(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	role := newRole(t, db, "LOGIN")
	exec(t, db, `GRANT USAGE ON SCHEMA `+pgtestSchema(t, db)+` TO `+role)
	conn := asRole(t, db, role)

	var table string
	err := conn.QueryRowContext(ctx, `SELECT jobs_ready_table('mine')`).Scan(&table)
	if sqlState(err) != "42501" { // insufficient_privilege
		t.Fatalf("a role without grants called the ready-table function: %q, %v; want permission denied", table, err)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_topics`); n != 0 {
		t.Fatalf("%d topics registered by a role without grants", n)
	}

	// Were it allowed to call it (a deployment that grants EXECUTE
	// widely), the function still reads the real registry. The registry
	// is empty: the app's next new topic gets id 1.
	exec(t, db, `GRANT EXECUTE ON FUNCTION jobs_ready_table(text) TO `+role)
	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE jobs_topics (
		id int GENERATED ALWAYS AS IDENTITY (START WITH 1) PRIMARY KEY, topic text UNIQUE, created_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT jobs_ready_table('bait')`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	var shadowed int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pg_temp.jobs_topics`).Scan(&shadowed); err != nil {
		t.Fatal(err)
	}
	if shadowed != 0 {
		t.Errorf("the function registered %d topics in the caller's temporary table", shadowed)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_topics WHERE topic = 'bait'`); n != 1 {
		t.Errorf("the topic is %d times in the registry, want once", n)
	}
	// The app (here the owner) opens a new topic.
	if err := db.DB.QueryRowContext(ctx, `SELECT jobs_ready_table('orders')`).Scan(&table); err != nil {
		t.Fatalf("the app's new topic after the temporary registry's call: %v", err)
	}
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO `+table+` (topic, data) VALUES ('orders', 'x')`); err != nil {
		t.Fatalf("insert into the new topic's ready table %s: %v", table, err)
	}
}

// The roles that could use the tables before the migration that revoked
// PUBLIC's right to call the function (its grants copied from theirs), and
// a role given the documented grants after it, can still open new topics.
func TestReadyTableFuncKeepsAppRoles(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	schema := pgtestSchema(t, db)
	grants := func(role string) []string {
		return []string{
			`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
			`GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, jobs_ready TO ` + role,
			`GRANT USAGE ON SEQUENCE jobs_id_seq TO ` + role,
		}
	}
	runFile(t, db, "0006_ready_table_privileges.tx.down.sql")
	before := newRole(t, db, "LOGIN")
	exec(t, db, grants(before)...)
	group := newRole(t, db, "NOLOGIN") // an app role by membership
	member := newRole(t, db, "LOGIN IN ROLE "+group)
	exec(t, db, grants(group)...)
	runFile(t, db, "0006_ready_table_privileges.tx.up.sql")
	after := newRole(t, db, "LOGIN")
	exec(t, db, append(grants(after), `GRANT EXECUTE ON FUNCTION jobs_ready_table(text) TO `+after)...)

	for _, role := range []string{before, member, after} {
		conn := asRole(t, db, role)
		topic := "new for " + role
		var table string
		if err := conn.QueryRowContext(ctx, `SELECT jobs_ready_table($1)`, topic).Scan(&table); err != nil {
			t.Errorf("a new topic's ready table as %s: %v", role, err)
			continue
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+table+` (topic, data) VALUES ($1, 'x')`, topic); err != nil {
			t.Errorf("insert into the new ready table as %s: %v", role, err)
		}
	}
}

// The function refuses a name no topic or subscription queue has, and
// registers nothing for it.
func TestReadyTableFuncValidatesName(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	for _, c := range []struct {
		name  string
		topic any
		ok    bool
	}{
		{"empty", "", false},
		{"NULL", nil, false},
		{"1001 bytes", strings.Repeat("é", 500) + "x", false},
		{"NUL", "a\x00b", false}, // text cannot hold it: refused before the call
		{"1000 bytes", strings.Repeat("é", 500), true},
		{"subscription queue", "orders\x1fbilling", true},
		{"quotes", `it's "a" topic`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := count(t, db, `SELECT count(*) FROM jobs_topics`)
			var table string
			err := db.DB.QueryRowContext(ctx, `SELECT jobs_ready_table($1)`, c.topic).Scan(&table)
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, table %s", table)
			}
			if c.name != "NUL" && sqlState(err) != "22023" { // invalid_parameter_value
				t.Fatalf("%v, want SQLSTATE 22023", err)
			}
			if n := count(t, db, `SELECT count(*) FROM jobs_topics`); n != before {
				t.Fatalf("%d topics registered for a refused name", n-before)
			}
		})
	}
}

// functionState is what a schema's ready-table function is: its
// definition (with the schema's name taken out) and who may execute it.
func functionState(t *testing.T, db *bun.DB) (def, acl string) {
	t.Helper()
	// By name, not 'jobs_ready_table(text)'::regprocedure: a statement
	// cached on the connection would keep the oid of a function since
	// dropped.
	const q = `SELECT replace(pg_get_functiondef(p.oid), current_schema(), '<schema>'),
		(SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
				WHEN a.grantee = p.proowner THEN 'owner' ELSE pg_get_userbyid(a.grantee) END || ':' || a.privilege_type AS g
			FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a) acl)
		FROM pg_proc p WHERE p.proname = 'jobs_ready_table' AND p.pronamespace = current_schema()::regnamespace`
	if err := db.QueryRowContext(context.Background(), q).Scan(&def, &acl); err != nil {
		t.Fatal(err)
	}
	return def, acl
}

// 0006's down migration gives back the function of 0003, with its grants,
// even with a role granted EXECUTE meanwhile.
func TestReadyTableFuncDown(t *testing.T) {
	_, at5 := pgtest.NewSchema(t)
	for _, f := range []string{"0001_create_events", "0002_ready_table", "0003_topic_ready_tables", "0004_id_blocks", "0005_subscriptions"} {
		runFile(t, at5, f+".tx.up.sql")
	}
	wantDef, wantACL := functionState(t, at5)

	db := migratedJobs(t)
	role := newRole(t, db, "NOLOGIN")
	exec(t, db, `GRANT EXECUTE ON FUNCTION jobs_ready_table(text) TO `+role)
	if def, acl := functionState(t, db); def == wantDef || acl == wantACL {
		t.Fatalf("the function after 0006 is 0003's:\n%s\n%s", def, acl)
	}
	runFile(t, db, "0006_ready_table_privileges.tx.down.sql")
	def, acl := functionState(t, db)
	if def != wantDef {
		t.Errorf("after 0006's down migration the function is\n%s\nwant 0003's\n%s", def, wantDef)
	}
	if acl != wantACL {
		t.Errorf("after 0006's down migration the grants are %s, want 0003's %s", acl, wantACL)
	}
}
