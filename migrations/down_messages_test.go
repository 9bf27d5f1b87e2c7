package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// 180 messages in every state (ready, with a header or not, scheduled,
// processing, dead, paused, unique, copies of named subscriptions); the
// migrations go down two steps (0009, 0008) and up again, and every message is
// delivered afterwards. The next down migration (0007, which drops the
// headers) refuses while the messages wait, with ErrNotEmpty, and changes
// nothing; WithForceDown runs it, and even then every message is
// delivered once the schema is up again and the app restarted.
func TestDownRefusesWhileMessagesWait(t *testing.T) {
	ctx := context.Background()
	_, db := pgtest.NewSchema(t)
	mustOK(t, "Migrate", migrations.Migrate(ctx, db))
	opts := dbpubsub.Options{NoListen: true, Lease: 500 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		RescueInterval: 100 * time.Millisecond, PruneInterval: -1}
	ps, err := dbpubsub.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	enqueue := func(tp pubsub.Topic, name string, n int, f func(i int) error) {
		t.Helper()
		for i := range n {
			if err := f(i); err != nil {
				t.Fatalf("enqueue on %s: %v", name, err)
			}
		}
		want[name] += n
	}
	plain := ps.Topic("plain")
	enqueue(plain, "plain", 20, func(i int) error { return plain.Enqueue(ctx, []byte(fmt.Sprint("p", i))) })
	enqueue(plain, "plain", 10, func(i int) error {
		return plain.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme"}), []byte(fmt.Sprint("h", i)))
	})
	enqueue(plain, "plain", 30, func(i int) error {
		return pubsub.EnqueueDelayed(ctx, plain, []byte(fmt.Sprint("d", i)), 300*time.Millisecond)
	})
	a, err := pubsub.Subscribe(ctx, ps, "fan", "a")
	mustOK(t, "Subscribe", err)
	_, err = pubsub.Subscribe(ctx, ps, "fan", "b")
	mustOK(t, "Subscribe", err)
	fan := ps.Topic("fan")
	enqueue(fan, "fan", 30, func(i int) error { return fan.Enqueue(ctx, []byte(fmt.Sprint("f", i))) })
	want["a"], want["b"] = 30, 30
	delete(want, "fan")
	for range 10 { // in hand when the migrations go down: processing
		dequeue(t, a)
	}
	held := ps.Topic("held")
	mustOK(t, "Pause", admin.Pause(ctx, held))
	enqueue(held, "held", 30, func(i int) error { return held.Enqueue(ctx, []byte(fmt.Sprint("x", i))) })
	uniq := ps.Topic("uniq")
	enqueue(uniq, "uniq", 20, func(i int) error {
		_, err := pubsub.EnqueueUnique(ctx, uniq, fmt.Sprint("k", i), []byte("u"))
		return err
	})
	dead := ps.Topic("dead")
	enqueue(dead, "dead", 10, func(i int) error {
		if err := dead.Enqueue(ctx, []byte("z")); err != nil {
			return err
		}
		return pubsub.Reject(ctx, dequeue(t, dead), errors.New("bad"))
	})
	total := 0
	for _, n := range want {
		total += n
	}
	if total != 180 {
		t.Fatalf("%d messages, want 180", total)
	}
	mustOK(t, "Close", ps.Close())

	name, err := migrations.Down(ctx, db)
	if err != nil || name != "0009_subscription_retry" {
		t.Fatalf("Down = %q, %v; want 0009_subscription_retry", name, err)
	}
	name, err = migrations.Down(ctx, db)
	if err != nil || name != "0008_pause" {
		t.Fatalf("Down = %q, %v; want 0008_pause", name, err)
	}
	name, err = migrations.Down(ctx, db)
	if !errors.Is(err, migrations.ErrNotEmpty) || name != "" ||
		!strings.Contains(err.Error(), "0007_headers") || !strings.Contains(err.Error(), "180 message(s)") {
		t.Fatalf("Down of 0007 with 180 messages not finished = %q, %v; want ErrNotEmpty naming the migration and the count", name, err)
	}
	if err := migrations.Verify(ctx, db); err == nil || !strings.Contains(err.Error(), "0008") || strings.Contains(err.Error(), "0007") {
		t.Fatalf("Verify after a refused down of 0007: %v; want only 0008 missing", err)
	}
	name, err = migrations.Down(ctx, db, migrations.WithForceDown())
	if err != nil || name != "0007_headers" {
		t.Fatalf("Down with WithForceDown = %q, %v; want 0007_headers", name, err)
	}
	mustOK(t, "Migrate up again", migrations.Migrate(ctx, db))

	ps, err = dbpubsub.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	topics := map[string]pubsub.Topic{"plain": ps.Topic("plain"), "held": ps.Topic("held"), "uniq": ps.Topic("uniq"), "dead": ps.Topic("dead")}
	for _, sub := range []string{"a", "b"} {
		topics[sub], err = pubsub.Subscribe(ctx, ps, "fan", sub)
		mustOK(t, "Subscribe", err)
	}
	mustOK(t, "Resume", admin.Resume(ctx, topics["held"]))
	if n, err := admin.RequeueAllDead(ctx, topics["dead"]); err != nil || n != 10 {
		t.Fatalf("RequeueAllDead = %d, %v; want 10", n, err)
	}
	for name, tp := range topics {
		for range want[name] {
			m := dequeue(t, tp)
			mustOK(t, "Ack", m.Ack(ctx))
		}
	}
}
