package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// migrate --grant ROLE, run by the owner, lets an app logged in as ROLE,
// which owns nothing, open a new topic; a role that does not exist is
// "not found" (exit 3).
func TestOpsMigrateGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, owner := pgtest.NewSchema(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "conveyor_app_" + hex.EncodeToString(b[:])
	if _, err := owner.DB.ExecContext(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := owner.DB.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	e := env{vars: map[string]string{"DATABASE_URL": dsn}}
	code, out, errs := runCmd(t, e, "migrate", "--grant", role)
	if code != 0 || !strings.Contains(out, "role \""+role+"\" may run an app") {
		t.Fatalf("migrate --grant %s: exit %d, stdout %q, stderr %q", role, code, out, errs)
	}
	code, _, errs = runCmd(t, e, "migrate", "--grant", "no_such_"+role)
	if code != 3 || !strings.Contains(errs, "no such role") {
		t.Errorf("migrate --grant of a missing role: exit %d, stderr %q; want 3 and the reason", code, errs)
	}

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest's DSN is not a URL: %v", err)
	}
	u.User = url.User(role)
	db, err := dbpubsub.Open(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ps, err := dbpubsub.New(db, dbpubsub.Options{NoListen: true, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	topic := ps.Topic("new")
	if err := topic.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatalf("Enqueue on a new topic as %s: %v", role, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := topic.Dequeue(dctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ListTopics(ctx, ps); err != nil {
		t.Fatalf("ListTopics as %s: %v", role, err)
	}
	code, out, errs = runCmd(t, env{vars: map[string]string{"DATABASE_URL": u.String()}}, "topics")
	if code != 0 || !strings.Contains(out, "new") {
		t.Errorf("topics as %s: exit %d, stdout %q, stderr %q", role, code, out, errs)
	}
}

// migrate --down reverts one migration at a time; one that could make
// waiting messages undeliverable is refused (exit 4) while a message
// waits, and runs with --force.
func TestOpsMigrateDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, db := pgtest.NewSchema(t)
	e := env{vars: map[string]string{"DATABASE_URL": dsn}}
	if code, out, errs := runCmd(t, e, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	ps, err := dbpubsub.New(db, dbpubsub.Options{NoListen: true, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Topic("orders").Enqueue(ctx, []byte("waiting")); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, e, "migrate", "--down")
	if code != 0 || out != "Table \"conveyor_events\": reverted 0009_subscription_retry.\n" {
		t.Fatalf("migrate --down: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "migrate", "--down")
	if code != 0 || out != "Table \"conveyor_events\": reverted 0008_pause.\n" {
		t.Fatalf("migrate --down: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "migrate", "--down")
	if code != 4 || out != "" || !strings.Contains(errs, "keeps 1 message(s) not finished") || !strings.Contains(errs, "--force") {
		t.Fatalf("migrate --down of 0007 with a message waiting: exit %d, stdout %q, stderr %q; want 4 and the hint", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "migrate", "--down", "--force")
	if code != 0 || out != "Table \"conveyor_events\": reverted 0007_headers.\n" {
		t.Fatalf("migrate --down --force: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runCmd(t, e, "migrate", "--force"); code != 2 {
		t.Errorf("migrate --force without --down: exit %d, stderr %q; want 2", code, errs)
	}
	if code, out, errs := runCmd(t, e, "migrate"); code != 0 {
		t.Fatalf("migrate up again: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
