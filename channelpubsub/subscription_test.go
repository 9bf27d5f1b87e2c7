package channelpubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// What this backend does where the contract leaves a choice, or what only
// memory has (capacity); the rules themselves are pubsubtest's.

func newPubSub(t *testing.T, opts channelpubsub.Options) *channelpubsub.PubSub {
	t.Helper()
	ps, err := channelpubsub.NewWithOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

func mustSubscribe(t *testing.T, ps *channelpubsub.PubSub, topic, sub string) pubsub.Topic {
	t.Helper()
	tp, err := ps.Subscribe(context.Background(), topic, sub)
	if err != nil {
		t.Fatalf("Subscribe(%q, %q): %v", topic, sub, err)
	}
	return tp
}

func mustDequeue(t *testing.T, tp pubsub.Topic, want string) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v, want %q", err, want)
	}
	if string(m.Data()) != want {
		t.Fatalf("Dequeue = %q, want %q", m.Data(), want)
	}
	return m
}

func wantNothing(t *testing.T, tp pubsub.Topic) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if m, err := tp.Dequeue(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dequeue = %v, %v; want nothing", m, err)
	}
}

// wait returns what a blocked call sent on done, failing the test if it
// is still blocked after a while.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the call is still blocked")
		return nil
	}
}

func TestDeletedSubscription(t *testing.T) {
	ps := newPubSub(t, channelpubsub.Options{})
	ctx := context.Background()
	old := mustSubscribe(t, ps, "t", "s")
	if err := old.Enqueue(ctx, []byte("1")); err != nil {
		t.Fatal(err)
	}
	inflight := mustDequeue(t, old, "1")
	blocked := make(chan error, 1)
	go func() {
		_, err := old.Dequeue(ctx)
		blocked <- err
	}()

	if err := ps.DeleteSubscription(ctx, "t", "s"); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, blocked); !errors.Is(err, pubsub.ErrNoSubscription) {
		t.Fatalf("Dequeue blocked when its subscription was deleted: %v, want ErrNoSubscription", err)
	}
	if err := inflight.Ack(ctx); !errors.Is(err, pubsub.ErrLeaseExpired) {
		t.Fatalf("Ack of a delivery of a deleted subscription: %v, want ErrLeaseExpired", err)
	}
	if err := pubsub.ExtendLease(ctx, inflight, time.Second); !errors.Is(err, pubsub.ErrLeaseExpired) {
		t.Fatalf("ExtendLease of a delivery of a deleted subscription: %v, want ErrLeaseExpired", err)
	}
	if _, err := admin.TopicStats(ctx, old); !errors.Is(err, pubsub.ErrNoSubscription) {
		t.Fatalf("Stats on a handle of a deleted subscription: %v, want ErrNoSubscription", err)
	}
	if _, _, err := pubsub.Claim(ctx, old, "k"); !errors.Is(err, pubsub.ErrNoSubscription) {
		t.Fatalf("Claim on a handle of a deleted subscription: %v, want ErrNoSubscription", err)
	}

	// Created again, the name is the new subscription's, on old handles too.
	mustSubscribe(t, ps, "t", "s")
	if err := ps.Topic("t").Enqueue(ctx, []byte("2")); err != nil {
		t.Fatal(err)
	}
	_ = mustDequeue(t, old, "2").Ack(ctx)
}

func TestDeletedDefaultSubscription(t *testing.T) {
	ps := newPubSub(t, channelpubsub.Options{})
	ctx := context.Background()
	plain := ps.Topic("t")
	named := mustSubscribe(t, ps, "t", "named")
	wantNothing(t, plain) // consumed from: the default is a subscription
	if err := plain.Enqueue(ctx, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := ps.DeleteSubscription(ctx, "t", pubsub.DefaultSubscription); err != nil {
		t.Fatal(err)
	}
	if subs, _ := ps.Subscriptions(ctx, "t"); len(subs) != 1 || subs[0] != "named" {
		t.Fatalf("Subscriptions = %q, want [named]", subs)
	}
	if s, err := admin.TopicStats(ctx, plain); err != nil || s != (admin.Stats{}) {
		t.Fatalf("Stats of the deleted default = %+v, %v; want a new, empty default", s, err)
	}
	if err := plain.Enqueue(ctx, []byte("2")); err != nil { // named only
		t.Fatal(err)
	}
	wantNothing(t, plain) // a subscription again, from now on
	if err := plain.Enqueue(ctx, []byte("3")); err != nil {
		t.Fatal(err)
	}
	_ = mustDequeue(t, plain, "3").Ack(ctx)
	for _, want := range []string{"1", "2", "3"} {
		_ = mustDequeue(t, named, want).Ack(ctx)
	}
}

func TestFullSubscriptionHoldsThePublish(t *testing.T) {
	// A publish to several subscriptions goes to all or none of them; a
	// full one holds the topic's publishers back.
	ps := newPubSub(t, channelpubsub.Options{Capacity: 1})
	ctx := context.Background()
	a, b := mustSubscribe(t, ps, "t", "a"), mustSubscribe(t, ps, "t", "b")
	for _, d := range []string{"1", "2"} { // 2 waits for room in both
		if err := a.Enqueue(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := a.Enqueue(short, []byte("3")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Enqueue while both subscriptions are full: %v, want it to block until ctx ends", err)
	}
	for _, want := range []string{"1", "2"} {
		_ = mustDequeue(t, a, want).Ack(ctx)
	}
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.Enqueue(short, []byte("4")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Enqueue while b is full: %v, want it to block until ctx ends", err)
	}
	wantNothing(t, a) // neither 3 nor 4 reached a
	for _, want := range []string{"1", "2"} {
		_ = mustDequeue(t, b, want).Ack(ctx)
	}
	wantNothing(t, b)
}

func TestDeleteWakesAPublisher(t *testing.T) {
	ps := newPubSub(t, channelpubsub.Options{Capacity: 1})
	ctx := context.Background()
	full := mustSubscribe(t, ps, "t", "full")
	if err := full.Enqueue(ctx, []byte("1")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- full.Enqueue(ctx, []byte("2")) }()
	time.Sleep(20 * time.Millisecond) // let it block; the assertion holds either way
	if err := ps.DeleteSubscription(ctx, "t", "full"); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, done); err != nil {
		t.Fatalf("Enqueue blocked on a subscription deleted meanwhile: %v, want nil (the copy went with it)", err)
	}
}

func TestUniqueIsPerSubscription(t *testing.T) {
	ps := newPubSub(t, channelpubsub.Options{Retention: time.Nanosecond}) // an ack frees the key at once
	ctx := context.Background()
	a, b := mustSubscribe(t, ps, "t", "a"), mustSubscribe(t, ps, "t", "b")
	if ok, err := pubsub.EnqueueUnique(ctx, a, "k", []byte("1")); !ok || err != nil {
		t.Fatalf("EnqueueUnique = %v, %v", ok, err)
	}
	_ = mustDequeue(t, a, "1").Ack(ctx) // frees k in a; b keeps its copy
	if ok, err := pubsub.EnqueueUnique(ctx, b, "k", []byte("2")); !ok || err != nil {
		t.Fatalf("EnqueueUnique with k free in a = %v, %v; want true", ok, err)
	}
	_ = mustDequeue(t, a, "2").Ack(ctx)
	_ = mustDequeue(t, b, "1").Ack(ctx)
	wantNothing(t, b)
	if _, err := pubsub.EnqueueUnique(ctx, a, "", nil); !errors.Is(err, pubsub.ErrInvalidKey) {
		t.Fatalf("EnqueueUnique with an empty key: %v, want ErrInvalidKey", err)
	}
}

func TestClaimIgnoresATransaction(t *testing.T) {
	// Memory takes part in no transaction: a claim is recorded at once,
	// and release forgets it.
	ps := newPubSub(t, channelpubsub.Options{})
	ctx := pubsub.WithTx(context.Background(), struct{}{})
	tp := ps.Topic("t")
	first, release, err := pubsub.Claim(ctx, tp, "k")
	if !first || err != nil {
		t.Fatalf("Claim = %v, %v", first, err)
	}
	if first, _, _ := pubsub.Claim(ctx, tp, "k"); first {
		t.Fatal("second Claim is first")
	}
	// The release of a claim that was not the first does nothing.
	_, notFirst, _ := pubsub.Claim(ctx, tp, "k")
	if err := notFirst(ctx); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := pubsub.Claim(ctx, tp, "k"); first {
		t.Fatal("a release of a claim that was not the first forgot the key")
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := pubsub.Claim(ctx, tp, "k"); !first {
		t.Fatal("Claim after release is not first")
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	ps := newPubSub(t, channelpubsub.Options{})
	_ = ps.Close()
	if _, err := ps.Subscribe(context.Background(), "t", "s"); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
}
