package migrations

import "testing"

// Migration 0008 gives the roles that may use the message table the same
// privileges on the paused table, which every claim reads, and an index
// for pruning dead rows; its down migration takes both away.
func TestPausedTableKeepsTheAppsGrants(t *testing.T) {
	db := migratedJobs(t)
	role := newRole(t, db, "NOLOGIN")
	runFile(t, db, "0008_pause.tx.down.sql")
	exec(t, db, `GRANT SELECT, INSERT, UPDATE, DELETE ON jobs TO `+role)
	runFile(t, db, "0008_pause.tx.up.sql")
	for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
		if n := count(t, db, `SELECT count(*) WHERE has_table_privilege('`+role+`', 'jobs_paused', '`+p+`')`); n != 1 {
			t.Errorf("the app role has no %s on jobs_paused after 0008", p)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_died_idx' AND schemaname = current_schema()`); n != 1 {
		t.Error("no index jobs_died_idx after 0008")
	}
	runFile(t, db, "0008_pause.tx.down.sql")
	if n := count(t, db, `SELECT count(*) FROM pg_class WHERE relname IN ('jobs_paused', 'jobs_died_idx')
		AND relnamespace = current_schema()::regnamespace`); n != 0 {
		t.Errorf("%d of jobs_paused and jobs_died_idx left after 0008's down migration", n)
	}
}
