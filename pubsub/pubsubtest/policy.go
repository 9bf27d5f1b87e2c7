package pubsubtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// The cases of per-subscription retry policies (pubsub.SubscriberWith),
// which every backend with subscriptions has.
var policyCases = []testCase{
	{"SubscriptionRetryPolicies", testSubscriptionMaxAttempts},
	{"SubscriptionBackoffs", testSubscriptionBackoff},
	{"SubscriptionPolicyKeptOnResubscribe", testSubscriptionPolicyKept},
	{"SubscriptionPolicyInvalid", testSubscriptionPolicyInvalid},
	{"SubscriptionPolicyOnLeaseExpiry", testSubscriptionPolicyLease},
	{"SubscriptionPolicySharedAcrossProcesses", testSubscriptionPolicyShared},
}

// quick is a retry policy of n attempts that retries at once.
func quick(n int) pubsub.RetryPolicy {
	return pubsub.RetryPolicy{MaxAttempts: n, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: -1}
}

// subscribeWith is subscribe with opts.
func subscribeWith(t *testing.T, ps pubsub.PubSub, topic, sub string, opts pubsub.SubscriptionOptions) pubsub.Topic {
	t.Helper()
	tp, err := pubsub.SubscribeWith(context.Background(), ps, topic, sub, opts)
	if err != nil {
		t.Fatalf("SubscribeWith(%q, %q, %+v): %v", topic, sub, opts, err)
	}
	tp = wrapSubscription(ps, tp)
	t.Cleanup(func() { _ = tp.Close() })
	return tp
}

// nackUntilDead nacks every delivery of the one message in tp and checks
// that it is delivered want times, then no more (dead).
func nackUntilDead(t *testing.T, h Harness, what string, tp pubsub.Topic, want int) {
	t.Helper()
	var id string
	for i := 1; i <= want; i++ {
		m := dequeue(t, tp)
		id = m.ID()
		wantAttempt(t, h, m, i)
		nack(t, m)
	}
	expectNone(t, tp, 300*time.Millisecond)
	if h.Abilities.DeadLetters {
		if dead := deadLetters(t, tp); len(dead) != 1 || dead[0].ID != id || dead[0].Attempts != want {
			t.Fatalf("ListDead of %s: %+v, want message %s with %d attempts", what, dead, id, want)
		}
	}
}

// testSubscriptionMaxAttempts: two subscriptions of one topic with 2 and
// 4 attempts; a message failing in both is dead after 2 deliveries in
// one and 4 in the other, whatever the PubSub's policy (20).
func testSubscriptionMaxAttempts(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{Retry: quick(20)})
	const topic = "policy-attempts"
	two := subscribeWith(t, ps, topic, "two", pubsub.SubscriptionOptions{Retry: quick(2)})
	four := subscribeWith(t, ps, topic, "four", pubsub.SubscriptionOptions{Retry: quick(4)})
	for tp, want := range map[pubsub.Topic]int{two: 2, four: 4} {
		if r, ok := pubsub.As[wrap.RetryReporter](tp); ok && r.RetryPolicy().MaxAttempts != want {
			t.Fatalf("RetryPolicy of the subscription of %d attempts: %+v", want, r.RetryPolicy())
		}
	}
	enqueue(t, open(t, ps, topic), "fails everywhere")
	nackUntilDead(t, h, `"two"`, two, 2)
	nackUntilDead(t, h, `"four"`, four, 4)
}

// testSubscriptionBackoff: a subscription whose backoff is an hour keeps
// a nacked message back, while one of a millisecond has it again.
func testSubscriptionBackoff(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{Retry: quick(20)})
	const topic = "policy-backoff"
	slow := subscribeWith(t, ps, topic, "slow", pubsub.SubscriptionOptions{Retry: pubsub.RetryPolicy{MinBackoff: time.Hour, Jitter: -1}})
	fast := subscribeWith(t, ps, topic, "fast", pubsub.SubscriptionOptions{Retry: quick(5)})
	enqueue(t, open(t, ps, topic), "fails once")
	nack(t, dequeue(t, slow))
	nack(t, dequeue(t, fast))
	ack(t, dequeue(t, fast))
	expectNone(t, slow, 500*time.Millisecond)
}

// testSubscriptionPolicyKept: a subscription keeps the policy it was made
// with. SubscribeWith of another is refused (ErrSubscriptionConflict), of
// the same or of none is not; a handle of Subscribe, and the default
// subscription's handle of PubSub.Topic, deliver with the stored policy.
func testSubscriptionPolicyKept(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ctx := context.Background()
	ps := newPubSub(t, h, Config{Retry: quick(20)})
	const topic = "policy-kept"
	subscribeWith(t, ps, topic, "p", pubsub.SubscriptionOptions{Retry: quick(2)})
	_, err := pubsub.SubscribeWith(ctx, ps, topic, "p", pubsub.SubscriptionOptions{Retry: quick(3)})
	wantErr(t, "SubscribeWith of another policy", err, pubsub.ErrSubscriptionConflict)
	subscribeWith(t, ps, topic, "p", pubsub.SubscriptionOptions{Retry: quick(2)})
	plain := subscribe(t, ps, topic, "p")
	subscribeWith(t, ps, topic, pubsub.DefaultSubscription, pubsub.SubscriptionOptions{Retry: quick(3)})
	def := open(t, ps, topic)
	enqueue(t, def, "fails")
	nackUntilDead(t, h, `"p" opened without options`, plain, 2)
	nackUntilDead(t, h, "the default subscription through Topic", def, 3)
}

// testSubscriptionPolicyInvalid: options that make no sense are refused
// with ErrInvalidSubscriptionOptions, and make no subscription.
func testSubscriptionPolicyInvalid(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	for _, r := range []pubsub.RetryPolicy{{MaxAttempts: -1}, {MinBackoff: -time.Second}, {MaxBackoff: -1}, {Jitter: 2}} {
		_, err := pubsub.SubscribeWith(ctx, ps, "policy-invalid", "bad", pubsub.SubscriptionOptions{Retry: r})
		wantErr(t, fmt.Sprintf("SubscribeWith of %+v", r), err, pubsub.ErrInvalidSubscriptionOptions)
	}
	wantSubscriptions(t, ps, "policy-invalid")
}

// testSubscriptionPolicyLease: a message whose every delivery's lease runs
// out is dead after the subscription's attempts, not the PubSub's.
func testSubscriptionPolicyLease(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.DeadLetters, "dead letters (admin.DeadLetters)")
	const lease = 300 * time.Millisecond
	ps := newPubSub(t, h, Config{Lease: lease, Retry: quick(20)})
	tp := subscribeWith(t, ps, "policy-lease", "p", pubsub.SubscriptionOptions{Retry: quick(2)})
	enqueue(t, open(t, ps, "policy-lease"), "crashes its consumer")
	first := dequeue(t, tp)
	second := dequeue(t, tp)
	wantAttempt(t, h, second, 2)
	expectNone(t, tp, 4*lease)
	if dead := deadLetters(t, tp); len(dead) != 1 || dead[0].ID != first.ID() || dead[0].Attempts != 2 {
		t.Fatalf("ListDead: %+v, want message %s with 2 attempts", dead, first.ID())
	}
}

// testSubscriptionPolicyShared: another PubSub on the same store (another
// process) that opens the subscription without options delivers with the
// policy it was made with, and is refused another; a subscription made
// without one delivers with each PubSub's.
func testSubscriptionPolicyShared(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.Shared, "sharing across processes (Abilities.Shared)")
	cfg := Config{Retry: quick(20)}
	const topic = "policy-shared"
	one := newPubSub(t, h, cfg)
	subscribeWith(t, one, topic, "p", pubsub.SubscriptionOptions{Retry: quick(2)})
	two := h.Reopen(t, cfg, one)
	_, err := pubsub.SubscribeWith(context.Background(), two, topic, "p", pubsub.SubscriptionOptions{Retry: quick(3)})
	wantErr(t, "SubscribeWith of another policy in another process", err, pubsub.ErrSubscriptionConflict)
	tp := subscribe(t, two, topic, "p")
	if r, ok := pubsub.As[wrap.RetryReporter](tp); ok && r.RetryPolicy().MaxAttempts != 2 {
		t.Fatalf("RetryPolicy in the other process: %+v, want 2 attempts", r.RetryPolicy())
	}
	enqueue(t, open(t, two, topic), "fails")
	nackUntilDead(t, h, `"p" in another process`, tp, 2)

	// A subscription made without a policy has none of its own: each
	// process delivers it with its PubSub's.
	const none = "policy-shared-none"
	subscribe(t, one, none, "plain")
	three := h.Reopen(t, Config{Retry: quick(3)}, one)
	plain := subscribe(t, three, none, "plain")
	enqueue(t, open(t, three, none), "fails")
	nackUntilDead(t, h, `"plain" (no policy of its own) in a process of 3 attempts`, plain, 3)
}
