package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// loginRole creates a LOGIN role of t's own (roles are cluster-wide) and
// drops it, with every grant it got, when t ends.
func loginRole(t *testing.T, owner *bun.DB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "conveyor_app_" + hex.EncodeToString(b[:])
	if _, err := owner.DB.ExecContext(context.Background(), `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := owner.DB.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return role
}

// connectAs returns a DB whose sessions log in as role, on dsn's schema.
// It is closed before loginRole's clean-up drops the role.
func connectAs(t *testing.T, dsn, role string) *bun.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = role, ""
	db := bun.NewDB(stdlib.OpenDB(*cfg), pgdialect.New())
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s as the app role: %v", what, err)
	}
}

func dequeue(t *testing.T, topic pubsub.Topic) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := topic.Dequeue(ctx)
	mustOK(t, "Dequeue", err)
	return m
}

// An app whose role owns nothing and was given only what
// migrations.WithAppRole grants (the owner ran the migrations) runs every
// part of dbpubsub: topics used before the grant and new ones (whose ready
// tables it cannot create itself), enqueue in every form, dequeue,
// subscriptions, dead letters, pause, the inbox, stats and the list of
// topics. The ready-table function stays out of PUBLIC's reach.
func TestAppRoleRunsTheWholeApp(t *testing.T) {
	ctx := context.Background()
	dsn, owner := pgtest.NewSchema(t)
	mustOK(t, "Migrate as the owner", migrations.Migrate(ctx, owner))

	// A topic the owner used before the app role existed: its ready table
	// was made without the app's grants.
	ops, err := dbpubsub.New(owner, dbpubsub.Options{NoListen: true, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Topic("old").Enqueue(ctx, []byte("before the grant")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "Close", ops.Close())

	role := loginRole(t, owner)
	if err := migrations.Migrate(ctx, owner, migrations.WithAppRole(role)); err != nil {
		t.Fatalf("Migrate with WithAppRole(%q) as the owner: %v", role, err)
	}
	if err := migrations.Grant(ctx, owner, "no_such_role_"+role); !errors.Is(err, migrations.ErrUnknownRole) {
		t.Errorf("Grant to a role that does not exist: %v, want ErrUnknownRole", err)
	}

	app := connectAs(t, dsn, role)
	var owns, create int
	if err := app.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM pg_class WHERE relowner = current_user::regrole)
		+ (SELECT count(*) FROM pg_proc WHERE proowner = current_user::regrole),
		has_schema_privilege(current_schema(), 'CREATE')::int + has_database_privilege(current_database(), 'CREATE')::int`).
		Scan(&owns, &create); err != nil {
		t.Fatal(err)
	}
	if owns != 0 || create != 0 {
		t.Fatalf("the app role owns %d objects and has CREATE %d times; the test shows nothing", owns, create)
	}
	mustOK(t, "Migrate (up to date)", migrations.Migrate(ctx, app))
	mustOK(t, "Verify", migrations.Verify(ctx, app))

	ps, err := dbpubsub.New(app, dbpubsub.Options{NoListen: true, PollInterval: 20 * time.Millisecond,
		Retry: pubsub.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })

	t.Run("topic used before the grant", func(t *testing.T) {
		old := ps.Topic("old")
		if m := dequeue(t, old); string(m.Data()) != "before the grant" {
			t.Fatalf("dequeued %q", m.Data())
		} else {
			mustOK(t, "Ack", m.Ack(ctx))
		}
		mustOK(t, "Enqueue", old.Enqueue(ctx, []byte("after")))
		mustOK(t, "Ack", dequeue(t, old).Ack(ctx))
	})

	t.Run("new topic", func(t *testing.T) {
		orders := ps.Topic("orders")
		mustOK(t, "Enqueue", orders.Enqueue(ctx, []byte("1")))
		mustOK(t, "EnqueueBatch", pubsub.EnqueueBatch(ctx, orders, [][]byte{[]byte("2"), []byte("3")}))
		mustOK(t, "EnqueueAt", pubsub.EnqueueAt(ctx, orders, []byte("4"), time.Now()))
		_, err := pubsub.EnqueueUnique(ctx, orders, "k", []byte("5"))
		mustOK(t, "EnqueueUnique", err)
		tx, err := app.BeginTx(ctx, nil)
		mustOK(t, "BeginTx", err)
		mustOK(t, "Enqueue in a transaction", orders.Enqueue(pubsub.WithTx(ctx, tx), []byte("6")))
		mustOK(t, "Commit", tx.Commit())
		var got []string
		for range 6 {
			m := dequeue(t, orders)
			got = append(got, string(m.Data()))
			mustOK(t, "Ack", m.Ack(ctx))
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"1", "2", "3", "4", "5", "6"}) {
			t.Fatalf("dequeued %q", got)
		}
		st, err := admin.TopicStats(ctx, orders)
		mustOK(t, "TopicStats", err)
		if st.Ready != 0 {
			t.Errorf("stats after every message acked: %+v", st)
		}
	})

	t.Run("subscriptions", func(t *testing.T) {
		billing, err := pubsub.Subscribe(ctx, ps, "invoices", "billing")
		mustOK(t, "Subscribe", err)
		audit, err := pubsub.Subscribe(ctx, ps, "invoices", "audit")
		mustOK(t, "Subscribe", err)
		_, err = pubsub.Subscribe(ctx, ps, "invoices", "temporary")
		mustOK(t, "Subscribe", err)
		mustOK(t, "DeleteSubscription", admin.DeleteSubscription(ctx, ps, "invoices", "temporary"))
		mustOK(t, "Enqueue", ps.Topic("invoices").Enqueue(ctx, []byte("inv")))
		for _, sub := range []pubsub.Topic{billing, audit} {
			mustOK(t, "Ack", dequeue(t, sub).Ack(ctx))
		}
		subs, err := admin.ListSubscriptions(ctx, ps, "invoices")
		mustOK(t, "ListSubscriptions", err)
		if len(subs) != 2 {
			t.Errorf("subscriptions %q, want 2", subs)
		}
		topics, err := admin.ListTopics(ctx, ps)
		mustOK(t, "ListTopics", err)
		if len(topics) < 3 {
			t.Errorf("topics %+v, want old, orders and invoices at least", topics)
		}
	})

	t.Run("dead letters", func(t *testing.T) {
		jobs := ps.Topic("jobs")
		mustOK(t, "Enqueue", jobs.Enqueue(ctx, []byte("doomed")))
		mustOK(t, "Reject", pubsub.Reject(ctx, dequeue(t, jobs), errors.New("bad input")))
		mustOK(t, "Enqueue", jobs.Enqueue(ctx, []byte("failing")))
		mustOK(t, "Fail", pubsub.Fail(ctx, dequeue(t, jobs), errors.New("last attempt")))
		dead, err := admin.ListDead(ctx, jobs, 0)
		mustOK(t, "ListDead", err)
		if len(dead) != 2 {
			t.Fatalf("%d dead, want 2", len(dead))
		}
		mustOK(t, "RequeueDead", admin.RequeueDead(ctx, jobs, dead[0].ID))
		mustOK(t, "Ack", dequeue(t, jobs).Ack(ctx))
		mustOK(t, "DeleteDead", admin.DeleteDead(ctx, jobs, dead[1].ID))
	})

	t.Run("pause", func(t *testing.T) {
		reports := ps.Topic("reports")
		mustOK(t, "Pause", admin.Pause(ctx, reports))
		mustOK(t, "Enqueue", reports.Enqueue(ctx, []byte("r")))
		paused, err := admin.IsPaused(ctx, reports)
		mustOK(t, "IsPaused", err)
		if !paused {
			t.Fatal("not paused after Pause")
		}
		mustOK(t, "Resume", admin.Resume(ctx, reports))
		mustOK(t, "Ack", dequeue(t, reports).Ack(ctx))
	})

	t.Run("inbox", func(t *testing.T) {
		emails := ps.Topic("emails")
		tx, err := app.BeginTx(ctx, nil)
		mustOK(t, "BeginTx", err)
		first, _, err := pubsub.Claim(pubsub.WithTx(ctx, tx), emails, "order-1")
		mustOK(t, "Claim in a transaction", err)
		mustOK(t, "Commit", tx.Commit())
		again, _, err := pubsub.Claim(ctx, emails, "order-1")
		mustOK(t, "Claim", err)
		if !first || again {
			t.Fatalf("claims of one key: first %v, second %v; want true, false", first, again)
		}
		first, release, err := pubsub.Claim(ctx, emails, "order-2")
		mustOK(t, "Claim", err)
		mustOK(t, "release", release(ctx))
		if !first {
			t.Fatal("a new key's claim was not the first")
		}
	})

	t.Run("function not callable by PUBLIC", func(t *testing.T) {
		fn := migrations.ReadyTableFunc(migrations.DefaultTable) + "(text)"
		var public bool
		if err := owner.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
			WHERE p.oid = $1::regprocedure AND a.grantee = 0)`, fn).Scan(&public); err != nil {
			t.Fatal(err)
		}
		if public {
			t.Fatal("PUBLIC may execute the ready-table function")
		}
		// A role with the schema's USAGE, as every role has on public,
		// and nothing else cannot call it.
		other := loginRole(t, owner)
		var schema string
		if err := owner.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.DB.ExecContext(ctx, `GRANT USAGE ON SCHEMA `+schema+` TO `+other); err != nil {
			t.Fatal(err)
		}
		db := connectAs(t, dsn, other)
		var table string
		err := db.QueryRowContext(ctx, `SELECT `+migrations.ReadyTableFunc(migrations.DefaultTable)+`('mine')`).Scan(&table)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Fatalf("a role without grants called the function: %q, %v; want permission denied", table, err)
		}
		// Closed before the role is dropped.
		_ = db.Close()
	})
}
