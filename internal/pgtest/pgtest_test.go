package pgtest_test

import (
	"context"
	"testing"

	"github.com/conveyorgo/conveyor/internal/pgtest"
)

func TestNewSchemaIsolated(t *testing.T) {
	ctx := context.Background()
	_, db1 := pgtest.NewSchema(t)
	_, db2 := pgtest.NewSchema(t)
	if _, err := db1.ExecContext(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db1.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// The same name in the other schema does not exist.
	if _, err := db2.ExecContext(ctx, "SELECT * FROM t"); err == nil {
		t.Fatal("table t of one schema is visible from another")
	}
	var s1, s2 string
	if err := db1.QueryRowContext(ctx, "SELECT current_schema()").Scan(&s1); err != nil {
		t.Fatal(err)
	}
	if err := db2.QueryRowContext(ctx, "SELECT current_schema()").Scan(&s2); err != nil {
		t.Fatal(err)
	}
	if s1 == s2 || s1 == "public" {
		t.Fatalf("schemas %q and %q: want two fresh ones", s1, s2)
	}
}

func TestWithSearchPath(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"url", "postgres://u@127.0.0.1:5432/db?sslmode=disable", "postgres://u@127.0.0.1:5432/db?search_path=s1&sslmode=disable"},
		{"keyvalue", "host=127.0.0.1 user=u", "host=127.0.0.1 user=u search_path=s1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pgtest.WithSearchPath(tc.in, "s1")
			if err != nil || got != tc.want {
				t.Fatalf("WithSearchPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}
