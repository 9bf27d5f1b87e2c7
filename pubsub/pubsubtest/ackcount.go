package pubsubtest

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The cases of counting acks (admin.AckCounter).
var ackCountCases = []testCase{
	{"AckCount", testAckCount},
	{"AckCountIsPerSubscription", testAckCountPerSubscription},
	{"AckCountUnsupported", testAckCountUnsupported},
}

// clockMargin is how far the suite's times to count acks from are kept from
// the acks: a backend may time them by another clock (a database's now()),
// or count them by the second.
const clockMargin = 2 * time.Second

func needAckCount(t *testing.T, h Harness) {
	t.Helper()
	need(t, h.Abilities.AckCount, "counting acks (admin.AckCounter)")
}

// wantAcked checks that AckedSince(since) of tp is want (what names tp
// in a failure).
func wantAcked(t *testing.T, tp pubsub.Topic, what string, since time.Time, want int64) {
	t.Helper()
	got, err := admin.AckedSince(context.Background(), tp, since)
	if err != nil || got != want {
		t.Fatalf("AckedSince(%s) of %s = %d, %v; want %d, nil", since.Format(time.RFC3339Nano), what, got, err, want)
	}
}

// testAckCount: only acks count, a message acked on its second delivery
// once, and none is counted from a time after them.
func testAckCount(t *testing.T, h Harness) {
	needAckCount(t, h)
	cfg := Config{Retry: pubsub.RetryPolicy{MaxAttempts: 5, MinBackoff: 100 * time.Millisecond, Jitter: -1}}
	tp := open(t, newPubSub(t, h, cfg), "ack-count")
	before := time.Now().Add(-clockMargin)
	wantAcked(t, tp, "a fresh topic", before, 0)

	enqueue(t, tp, "a", "b", "c")
	a, b, c := dequeue(t, tp), dequeue(t, tp), dequeue(t, tp)
	ack(t, a)
	ack(t, b)
	nack(t, c)
	wantAcked(t, tp, "the topic after 2 acks and a nack", before, 2)
	wantAcked(t, tp, "the topic, from after the acks,", time.Now().Add(clockMargin), 0)

	again := dequeue(t, tp)
	wantData(t, again, string(c.Data()))
	ack(t, again)
	wantAcked(t, tp, "the topic once the nacked message was acked", before, 3)
	wantAcked(t, open(t, newPubSub(t, h, cfg), "ack-count"), "the topic on another store", before, 0)
}

// testAckCountPerSubscription: the acks of one subscription are not
// counted on another, nor on the default one.
func testAckCountPerSubscription(t *testing.T, h Harness) {
	needAckCount(t, h)
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	a, b := subscribe(t, ps, "ack-count-subs", "a"), subscribe(t, ps, "ack-count-subs", "b")
	before := time.Now().Add(-clockMargin)
	enqueue(t, open(t, ps, "ack-count-subs"), "x", "y")
	ack(t, dequeue(t, a))
	ack(t, dequeue(t, a))
	m := dequeue(t, b)
	wantAcked(t, a, "subscription a", before, 2)
	wantAcked(t, b, "subscription b, which acked nothing", before, 0)
	wantAcked(t, open(t, ps, "ack-count-subs"), "the default subscription", before, 0)
	ack(t, m)
	wantAcked(t, b, "subscription b", before, 1)
	wantAcked(t, a, "subscription a", before, 2)
}

// testAckCountUnsupported: without the ability, admin.AckedSince says
// so rather than count nothing.
func testAckCountUnsupported(t *testing.T, h Harness) {
	if h.Abilities.AckCount {
		t.Skip("the harness declares counting acks (admin.AckCounter): see AckCount")
	}
	tp := open(t, newPubSub(t, h, Config{}), "ack-count-unsupported")
	_, err := admin.AckedSince(context.Background(), tp, time.Now())
	wantErr(t, "AckedSince of a backend without admin.AckCounter", err, pubsub.ErrUnsupported)
}
