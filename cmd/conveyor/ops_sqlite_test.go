package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// TestOpsSQLite runs the commands on a sqlitepubsub file (--sqlite).
func TestOpsSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	ctx := context.Background()
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	orders := ps.Topic("orders")
	if err := orders.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme"}), []byte(deadData)); err != nil {
		t.Fatal(err)
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dead := m.ID()
	if err := pubsub.Reject(ctx, m, errors.New(deadReason)); err != nil {
		t.Fatal(err)
	}
	if err := orders.Enqueue(ctx, []byte(ready1Data)); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	db, err := sqlitepubsub.OpenDB(empty, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE other (x)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"Stats", []string{"stats", "orders", "--sqlite", path}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY"},
			[]string{"orders", "default", "1", "0", "0", "1", "AGE"}), nil},
		{"PeekDead", []string{"peek", "orders", "--state", "dead", "--sqlite", path}, 0, columns(
			[]string{"ID", "ATTEMPTS", "DIED AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{dead, "1", anyTime, "20", `"{\"order\":7,\"qty\":-1}"`, `"qty must be positive"`}), nil},
		{"Topics", []string{"topics", "--sqlite", path}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTIONS"},
			[]string{"orders", "default"}), nil},
		{"UnknownTopic", []string{"stats", "nosuch", "--sqlite", path}, 3, "", []string{`unknown topic "nosuch" (conveyor topics lists them)`}},
		{"NoFile", []string{"topics", "--sqlite", filepath.Join(dir, "nosuch.db")}, 2, "", []string{"--sqlite", "no such file"}},
		{"NotMigrated", []string{"topics", "--sqlite", empty}, 1, "", []string{"does not have sqlitepubsub's tables", "check --sqlite"}},
		{"Migrate", []string{"migrate", "--sqlite", path}, 2, "", []string{"migrate applies to PostgreSQL only"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, env{}, c.args...)
			if code != c.code {
				t.Errorf("conveyor %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, out, errs)
			}
			if c.code == 0 {
				if got := normalize(out); got != c.stdout {
					t.Errorf("conveyor %s: stdout\n%s\nwant\n%s", strings.Join(c.args, " "), got, c.stdout)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("conveyor %s: stderr %q does not say %q", strings.Join(c.args, " "), errs, w)
				}
			}
		})
	}
	// The commands made no table in the file without them.
	db, err = sqlitepubsub.OpenDB(empty, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlitepubsub.Verify(ctx, db); !errors.Is(err, sqlitepubsub.ErrNotMigrated) {
		t.Fatalf("the file without tables after the commands: Verify says %v, want ErrNotMigrated", err)
	}
}
