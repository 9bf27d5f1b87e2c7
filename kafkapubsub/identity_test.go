package kafkapubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A message's identity (pubsub.HeaderMessageID, a plain record header on
// the wire) stays with it through a delay, a Nack, its death and its
// re-queue, as its other header keys do.
func TestIdentitySurvives(t *testing.T) {
	t.Parallel()
	brokers := kafkapubsubtest.Brokers(t)
	retry := pubsub.RetryPolicy{MinBackoff: 10 * time.Millisecond, Jitter: -1}
	ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tp := ps.Topic("identity")
	h := pubsub.Header{pubsub.HeaderMessageID: "order-7", "tenant": "acme"}
	check := func(step string, m pubsub.Message) {
		t.Helper()
		if id, tenant := pubsub.Identity(m), pubsub.MessageHeader(m)["tenant"]; id != "order-7" || tenant != "acme" {
			t.Errorf("%s: identity %q and tenant %q, want order-7 and acme", step, id, tenant)
		}
	}
	if err := pubsub.EnqueueAt(pubsub.WithHeader(ctx, h), tp, []byte("d"), time.Now().Add(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("after the delay", m)
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err = tp.Dequeue(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a Nack", m)
	if err := pubsub.Reject(ctx, m, errors.New("poison")); err != nil {
		t.Fatal(err)
	}
	dead, err := admin.ListDead(ctx, tp, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %v, %v; want the message", dead, err)
	}
	if got := dead[0].Header[pubsub.HeaderMessageID]; got != "order-7" {
		t.Errorf("the dead message's identity is %q, want order-7", got)
	}
	if err := admin.RequeueDead(ctx, tp, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if m, err = tp.Dequeue(ctx); err != nil {
		t.Fatal(err)
	}
	check("after its re-queue", m)
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}
