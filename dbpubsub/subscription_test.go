package dbpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// subscribe is pubsub.Subscribe that fails t on error.
func subscribe(t *testing.T, ps pubsub.PubSub, topic, sub string) pubsub.Topic {
	t.Helper()
	tp, err := pubsub.Subscribe(context.Background(), ps, topic, sub)
	if err != nil {
		t.Fatalf("Subscribe(%q, %q): %v", topic, sub, err)
	}
	return tp
}

// wantData dequeues len(want) messages of tp, acks them, and checks their
// data, in order.
func wantData(t *testing.T, tp pubsub.Topic, want ...string) {
	t.Helper()
	for _, w := range want {
		m := dequeueWithin(t, tp, 15*time.Second)
		if string(m.Data()) != w {
			t.Fatalf("got %q, want %q", m.Data(), w)
		}
		if err := m.Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A publish in a caller's transaction writes every subscription's copy
// with the caller's writes, or none: single, batch, delayed and unique.
func TestPublishInTxFansOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	a, b := subscribe(t, ps, "tx", "a"), subscribe(t, ps, "tx", "b")
	publish := func(ctx context.Context, tp pubsub.Topic) error {
		if err := tp.Enqueue(ctx, []byte("one")); err != nil {
			return err
		}
		if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("two"), []byte("three")}); err != nil {
			return err
		}
		if err := pubsub.EnqueueAt(ctx, tp, []byte("four"), time.Now().Add(-time.Second)); err != nil {
			return err
		}
		added, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("five"))
		if err == nil && !added {
			err = errors.New("EnqueueUnique: not added")
		}
		return err
	}
	errRollback := errors.New("roll back")
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := publish(dbpubsub.WithTx(ctx, tx), ps.Topic("tx")); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("RunInTx: %v", err)
	}
	if n := countRows(t, db, "topic LIKE 'tx%'"); n != 0 {
		t.Fatalf("%d copies after the rollback, want none", n)
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return publish(dbpubsub.WithTx(ctx, tx), a) // a subscription's handle publishes to its topic
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []pubsub.Topic{a, b} {
		got := map[string]bool{}
		for range 5 {
			m := dequeueWithin(t, tp, 15*time.Second)
			got[string(m.Data())] = true
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 5 {
			t.Fatalf("got %v, want the 5 messages once each", got)
		}
		expectNone(t, tp, 200*time.Millisecond)
	}
	if n := countRows(t, db, "topic = 'tx'"); n != 0 {
		t.Errorf("%d copies in the default subscription, which was never consumed or declared; want none", n)
	}
}

// A subscription created or deleted by another process is seen by this
// process's next publish, though it had routed the topic before.
func TestSubscriptionsSeenAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, db := newStore(t)
	producer := newPubSub(t, db, dbpubsub.Options{})
	other := newPubSub(t, openDB(t, dsn), dbpubsub.Options{})
	tp := producer.Topic("seen")
	if err := tp.Enqueue(ctx, []byte("before")); err != nil { // routed: no subscription, the default queue
		t.Fatal(err)
	}
	x := subscribe(t, other, "seen", "x")
	if err := tp.Enqueue(ctx, []byte("single")); err != nil {
		t.Fatal(err)
	}
	if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("b1"), []byte("b2")}); err != nil {
		t.Fatal(err)
	}
	wantData(t, x, "single", "b1", "b2")
	// The default queue kept what came before any subscription, and only that.
	wantData(t, other.Topic("seen"), "before")

	y := subscribe(t, other, "seen", "y")
	if err := tp.Enqueue(ctx, []byte("to all")); err != nil {
		t.Fatal(err)
	}
	wantData(t, x, "to all")
	wantData(t, y, "to all")
	wantData(t, other.Topic("seen"), "to all") // the default became a subscription when consumed

	if err := admin.DeleteSubscription(ctx, other, "seen", "x"); err != nil {
		t.Fatal(err)
	}
	if err := tp.Enqueue(ctx, []byte("after delete")); err != nil {
		t.Fatal(err)
	}
	wantData(t, y, "after delete")
	if n := countRows(t, db, fmt.Sprintf("topic = 'seen%sx'", "\x1f")); n != 0 {
		t.Errorf("%d copies in the deleted subscription, want none", n)
	}
	subs, err := admin.ListSubscriptions(ctx, producer, "seen")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(subs) != "[default y]" {
		t.Errorf("subscriptions %v, want [default y]", subs)
	}
}

// Bad names and a subscription that does not exist are errors matchable
// with errors.Is, naming what was wrong.
func TestSubscriptionErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	for _, tc := range []struct {
		topic, sub string
		want       error
	}{
		{"t", "", pubsub.ErrInvalidSubscription},
		{"t", " x", pubsub.ErrInvalidSubscription},
		{"t", "a\nb", pubsub.ErrInvalidSubscription},
		{"", "x", pubsub.ErrInvalidTopic},
	} {
		_, err := ps.Subscribe(ctx, tc.topic, tc.sub)
		if !errors.Is(err, tc.want) {
			t.Errorf("Subscribe(%q, %q): %v, want %v", tc.topic, tc.sub, err, tc.want)
		}
	}
	err := ps.DeleteSubscription(ctx, "t", "never")
	if !errors.Is(err, pubsub.ErrNoSubscription) || !strings.Contains(fmt.Sprint(err), `"never"`) {
		t.Errorf("DeleteSubscription of one never created: %v, want ErrNoSubscription naming it", err)
	}
}

// A schema without migration 0005 (its tables dropped here) makes every
// publish, Dequeue and Subscribe say so: this version routes every publish
// through the subscriptions.
func TestLacksSubscriptionsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	for _, q := range []string{"DROP TABLE conveyor_events_fanout", "DROP TABLE conveyor_events_subscriptions"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic("old")
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "0005") {
			t.Errorf("%s without migration 0005: %v, want ErrNotMigrated naming 0005", what, err)
		}
	}
	check("Enqueue", tp.Enqueue(ctx, []byte("x")))
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := tp.Dequeue(dctx)
	check("Dequeue", err)
	_, err = ps.Subscribe(ctx, "old", "new")
	check("Subscribe", err)
	_, err = ps.Subscriptions(ctx, "old")
	check("Subscriptions", err)
}

// Inbox claims older than the retention are pruned with the finished
// rows; younger ones stay. A claim in a rolled-back transaction leaves
// nothing.
func TestInboxPrunedAndTransactional(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Retention: time.Hour})
	tp := subscribe(t, ps, "inbox", "s")
	claim := func(ctx context.Context, key string) bool {
		t.Helper()
		first, _, err := pubsub.Claim(ctx, tp, key)
		if err != nil {
			t.Fatalf("Claim(%q): %v", key, err)
		}
		return first
	}
	errRollback := errors.New("roll back")
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if !claim(dbpubsub.WithTx(ctx, tx), "rolled back") {
			t.Error("first claim in a transaction: not first")
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	if !claim(ctx, "rolled back") {
		t.Error("a claim rolled back is still there")
	}
	claim(ctx, "old")
	claim(ctx, "young")
	if _, err := db.ExecContext(ctx, `UPDATE conveyor_events_inbox SET claimed_at = now() - interval '2 hours' WHERE key = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if !claim(ctx, "old") {
		t.Error("a claim past the retention was not pruned")
	}
	if claim(ctx, "young") {
		t.Error("a claim within the retention was pruned")
	}
}
