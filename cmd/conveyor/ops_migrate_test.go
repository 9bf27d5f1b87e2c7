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
	"github.com/conveyorgo/conveyor/pubsub"
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
	if _, err := pubsub.ListTopics(ctx, ps); err != nil {
		t.Fatalf("ListTopics as %s: %v", role, err)
	}
	code, out, errs = runCmd(t, env{vars: map[string]string{"DATABASE_URL": u.String()}}, "topics")
	if code != 0 || !strings.Contains(out, "new") {
		t.Errorf("topics as %s: exit %d, stdout %q, stderr %q", role, code, out, errs)
	}
}
