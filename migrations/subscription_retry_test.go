package migrations

import (
	"context"
	"strings"
	"testing"
)

// Migration 0009 keeps a retry policy with a subscription; its down
// migration refuses (SQLSTATE CVD01, Down's ErrNotEmpty) while a
// subscription has one of its own, which it would drop, and runs when
// none has, or forced.
func TestSubscriptionRetryDownGuard(t *testing.T) {
	ctx := context.Background()
	db := migratedJobs(t)
	exec(t, db, `INSERT INTO jobs_subscriptions (topic, name) VALUES ('t', 'plain')`)
	sqlText, err := files.ReadFile("sql/0009_subscription_retry.tx.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	q := strings.NewReplacer("{{.Table}}", `"jobs"`, "{{.Prefix}}", "jobs").Replace(string(sqlText))
	guard := strings.Split(q, "--bun:split")[0]
	try := func() error {
		tx, err := db.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		_, err = tx.ExecContext(ctx, guard)
		return err
	}
	if err := try(); err != nil {
		t.Fatalf("the guard with no subscription policy: %v, want none", err)
	}
	exec(t, db, `INSERT INTO jobs_subscriptions (topic, name, retry_max_attempts, retry_min_backoff_ns, retry_max_backoff_ns, retry_jitter)
		VALUES ('t', 'own', 2, 1000000, 1000000, -1)`)
	if err := try(); sqlState(err) != refusedState || !strings.Contains(err.Error(), "1 subscription(s)") {
		t.Fatalf("the guard with a subscription policy: %v, want SQLSTATE %s naming 1 subscription", err, refusedState)
	}
	runFile(t, db, "0009_subscription_retry.tx.down.sql") // forced
	if n := count(t, db, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'jobs_subscriptions'::regclass
		AND attname LIKE 'retry_%' AND NOT attisdropped`); n != 0 {
		t.Fatalf("%d retry columns left after 0009's down migration", n)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs_subscriptions`); n != 2 {
		t.Fatalf("%d subscriptions after 0009's down migration, want both kept", n)
	}
	runFile(t, db, "0009_subscription_retry.tx.up.sql")
}
