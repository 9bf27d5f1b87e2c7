package migrations

import (
	"context"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

// The down migration of the ready table puts the messages waiting there
// back into the message table, as pending, under their ids.
func TestReadyTableDownKeepsMessages(t *testing.T) {
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	if err := Migrate(ctx, db, WithTable("jobs")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO jobs_ready (topic, data) VALUES ('t', 'a'), ('t', 'b')`); err != nil {
		t.Fatal(err)
	}
	down, err := files.ReadFile("sql/0002_ready_table.tx.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	q := strings.NewReplacer("{{.Table}}", `"jobs"`, "{{.Prefix}}", "jobs").Replace(string(down))
	for _, stmt := range strings.Split(q, "--bun:split") {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM jobs
		WHERE status = 'pending' AND topic = 't' AND data IN ('a', 'b') AND run_at = created_at`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d of the 2 ready messages are pending in the message table after the down migration", n)
	}
	var gone bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('jobs_ready') IS NULL AND to_regclass('jobs_all') IS NULL`).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if !gone {
		t.Fatal("jobs_ready or jobs_all is still there")
	}
}
