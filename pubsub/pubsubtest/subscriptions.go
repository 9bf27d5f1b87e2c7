package pubsubtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The cases of named subscriptions (pubsub.Subscriber) and of the inbox
// (pubsub.Inbox): the rules of pubsub's package documentation,
// "Subscriptions". A publish in a transaction that rolls back leaves no
// copy in any subscription; that is the backend's own test to write, with
// a transaction of its store.
var subscriptionCases = []testCase{
	{"SubscriptionsEachGetEveryMessage", testFanOut},
	{"SubscriptionGetsOnlyLaterMessages", testSubscribeLater},
	{"DefaultSubscriptionKeepsAPlainQueue", testDefaultKeeps},
	{"DefaultSubscriptionOnceDeclared", testDefaultDeclared},
	{"NamedSubscriptionsOnlyKeepNothingForDefault", testNamedOnly},
	{"CompetingConsumersInASubscription", testCompetingInSubscription},
	{"EveryEnqueueFansOut", testEnqueueVariantsFanOut},
	{"NackIsPerSubscription", testNackPerSubscription},
	{"DeadLettersArePerSubscription", testDeadPerSubscription},
	{"DeleteSubscription", testDeleteSubscription},
	{"DequeueOnDeletedSubscription", testDequeueDeleted},
	{"DequeueOnSubscriptionDeletedElsewhere", testDequeueDeletedElsewhere},
	{"InvalidSubscriptions", testInvalidSubscriptions},
	{"Inbox", testInbox},
	{"InboxIsPerSubscription", testInboxPerSubscription},
	{"DurableSubscriptions", testDurableSubscriptions},
	{"SharedSubscriptions", testSharedSubscriptions},
}

func needSubscriptions(t *testing.T, h Harness) {
	t.Helper()
	need(t, h.Abilities.Subscriptions, "subscriptions (pubsub.Subscriber)")
}

// subscribe returns a handle on subscription sub of topic, closed when the
// test ends.
func subscribe(t *testing.T, ps pubsub.PubSub, topic, sub string) pubsub.Topic {
	t.Helper()
	tp, err := pubsub.Subscribe(context.Background(), ps, topic, sub)
	if err != nil {
		t.Fatalf("Subscribe(%q, %q): %v", topic, sub, err)
	}
	if tp == nil {
		t.Fatalf("Subscribe(%q, %q) returned a nil topic and no error", topic, sub)
	}
	tp = wrapSubscription(ps, tp)
	t.Cleanup(func() { _ = tp.Close() })
	return tp
}

// wantSubscriptions checks that ListSubscriptions of topic is want, in
// that order.
func wantSubscriptions(t *testing.T, ps pubsub.PubSub, topic string, want ...string) {
	t.Helper()
	got, err := admin.ListSubscriptions(context.Background(), ps, topic)
	if err != nil {
		t.Fatalf("ListSubscriptions(%q): %v", topic, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListSubscriptions(%q) = %q, want %q", topic, got, want)
	}
}

// eventuallySubscriptions waits, up to patience, until topic's
// subscriptions are want, asking again every 20 ms.
func eventuallySubscriptions(t *testing.T, ps pubsub.PubSub, topic string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		got, err := admin.ListSubscriptions(ctx, ps, topic)
		if err == nil && slices.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ListSubscriptions(%q) = %q, %v; want %q within %v", topic, got, err, want, patience)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// receive checks that each of tps (named by their keys in failures) gets
// want, in order, dequeuing and acking one message per item.
func receive(t *testing.T, tps map[string]pubsub.Topic, want ...string) {
	t.Helper()
	for sub, tp := range tps {
		for i, w := range want {
			m := dequeue(t, tp)
			if string(m.Data()) != w {
				t.Fatalf("subscription %q: message %d is %q, want %q", sub, i, m.Data(), w)
			}
			ack(t, m)
		}
	}
}

// consumeAll runs one consumer on each of tps, acking what it gets, until
// they got n messages in all; it returns the data each consumer got, and
// fails the test if the n do not come within patience.
func consumeAll(t *testing.T, n int, tps ...pubsub.Topic) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var (
		mu    sync.Mutex
		total int
		got   = make([][]string, len(tps))
		wg    sync.WaitGroup
	)
	for i, tp := range tps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("consumer %d: Dequeue: %v", i, err)
					}
					return
				}
				if err := m.Ack(context.Background()); err != nil {
					t.Errorf("consumer %d: Ack %s: %v", i, m.ID(), err)
				}
				mu.Lock()
				got[i] = append(got[i], string(m.Data()))
				total++
				if total >= n {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total < n {
		t.Fatalf("%d consumers got %d messages within %v, want %d", len(tps), total, patience, n)
	}
	return got
}

// wantEach checks that got, the data several consumers got, holds every
// item of want exactly once.
func wantEach(t *testing.T, what string, got [][]string, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		for _, d := range g {
			seen[d]++
		}
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("%s: message %q delivered %d times, want 1", what, w, seen[w])
		}
		delete(seen, w)
	}
	for d, c := range seen {
		t.Errorf("%s: message %q delivered %d times, want none: it was not published", what, d, c)
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

func testFanOut(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	subs := map[string]pubsub.Topic{}
	for _, name := range []string{"c", "a", "b"} {
		subs[name] = subscribe(t, ps, "fanout", name)
	}
	msgs := numbered("m", 50)
	enqueue(t, open(t, ps, "fanout"), msgs...)
	ids := map[string]string{}
	for sub, tp := range subs {
		for i, want := range msgs {
			m := dequeue(t, tp)
			if string(m.Data()) != want {
				t.Fatalf("subscription %q: message %d is %q, want %q", sub, i, m.Data(), want)
			}
			if other, ok := ids[m.ID()]; ok {
				t.Fatalf("ID %s given to a copy in %s and in subscription %q: copies are distinct messages", m.ID(), other, sub)
			}
			ids[m.ID()] = fmt.Sprintf("subscription %q", sub)
			ack(t, m)
		}
	}
	for _, tp := range subs {
		expectNone(t, tp, 200*time.Millisecond)
	}
	// Publishing through Topic(name) does not consume: the default is no
	// subscription yet.
	wantSubscriptions(t, ps, "fanout", "a", "b", "c")
}

func testSubscribeLater(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	pub := open(t, ps, "later")
	early := subscribe(t, ps, "later", "early")
	enqueue(t, pub, "before")
	late := subscribe(t, ps, "later", "late")
	enqueue(t, pub, "after")
	receive(t, map[string]pubsub.Topic{"early": early}, "before", "after")
	receive(t, map[string]pubsub.Topic{"late": late}, "after")
	expectNone(t, early, 200*time.Millisecond)
	expectNone(t, late, 200*time.Millisecond)
}

// testDefaultKeeps: a topic with no subscription keeps its messages for
// the default subscription; once it has a named one, messages go to the
// subscriptions it has, and the default is one once consumed from.
func testDefaultKeeps(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	plain := open(t, ps, "plain")
	enqueue(t, plain, "a", "b")
	wantSubscriptions(t, ps, "plain")
	named := subscribe(t, ps, "plain", "named")
	enqueue(t, plain, "c") // the topic's one subscription is "named"
	wantSubscriptions(t, ps, "plain", "named")

	receive(t, map[string]pubsub.Topic{"default": plain}, "a", "b")
	expectNone(t, plain, 200*time.Millisecond) // c is named's only
	wantSubscriptions(t, ps, "plain", pubsub.DefaultSubscription, "named")

	enqueue(t, plain, "d") // now both are subscriptions
	receive(t, map[string]pubsub.Topic{"default": plain}, "d")
	receive(t, map[string]pubsub.Topic{"named": named}, "c", "d")
	expectNone(t, plain, 200*time.Millisecond)
	expectNone(t, named, 200*time.Millisecond)
}

// testDefaultDeclared: Subscribe with the default's name makes it a
// subscription, the one Topic(name) reads.
func testDefaultDeclared(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	def := subscribe(t, ps, "declared", pubsub.DefaultSubscription)
	named := subscribe(t, ps, "declared", "named")
	wantSubscriptions(t, ps, "declared", pubsub.DefaultSubscription, "named")
	plain := open(t, ps, "declared")
	enqueue(t, plain, "x", "y")
	receive(t, map[string]pubsub.Topic{"default": def, "named": named}, "x")
	// Topic(name) and Subscribe(name, DefaultSubscription) share the
	// default subscription.
	receive(t, map[string]pubsub.Topic{"default (Topic)": plain, "named": named}, "y")
	expectNone(t, def, 200*time.Millisecond)
	expectNone(t, named, 200*time.Millisecond)
}

// testNamedOnly: a topic consumed only through named subscriptions keeps
// no copies for the default.
func testNamedOnly(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	named := subscribe(t, ps, "named-only", "named")
	pub := open(t, ps, "named-only")
	const n = 5
	msgs := numbered("n", n)
	enqueue(t, pub, msgs...)
	if h.Abilities.Stats {
		s, err := admin.TopicStats(ctx, named)
		if err != nil {
			t.Fatalf("Stats of the named subscription: %v", err)
		}
		if s.Ready+s.Processing != n || s.Scheduled != 0 || s.Dead != 0 {
			t.Fatalf("Stats of the named subscription = %+v, want %d ready, nothing else", s, n)
		}
		s, err = admin.TopicStats(ctx, pub) // the default's, which is none
		if err != nil {
			t.Fatalf("Stats of Topic(name): %v", err)
		}
		if s.Ready+s.Processing+s.Scheduled+s.Dead != 0 {
			t.Fatalf("Stats of Topic(name), not a subscription = %+v, want nothing kept", s)
		}
	}
	wantSubscriptions(t, ps, "named-only", "named")
	expectNone(t, pub, 200*time.Millisecond) // consuming makes the default a subscription, an empty one
	// A backend may finish declaring it after that Dequeue gave up
	// (kafkapubsub: a few round trips that a loaded machine makes longer
	// than 200 ms); it must not give up on it.
	eventuallySubscriptions(t, ps, "named-only", pubsub.DefaultSubscription, "named")
	receive(t, map[string]pubsub.Topic{"named": named}, msgs...)
}

// testCompetingInSubscription: the consumers of one subscription, on
// handles of their own, compete while producers publish; another
// subscription gets every message, in each producer's order.
func testCompetingInSubscription(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	const topic, producers, perProducer = "compete", 4, 50
	workers := []pubsub.Topic{subscribe(t, ps, topic, "workers"), subscribe(t, ps, topic, "workers"), subscribe(t, ps, topic, "workers")}
	audit := subscribe(t, ps, topic, "audit")
	var all []string
	var wg sync.WaitGroup
	for p := range producers {
		msgs := numbered(fmt.Sprintf("p%d-", p), perProducer)
		all = append(all, msgs...)
		pub := open(t, ps, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range msgs {
				if err := pub.Enqueue(context.Background(), []byte(d)); err != nil {
					t.Errorf("Enqueue(%q): %v", d, err)
					return
				}
			}
		}()
	}
	got := consumeAll(t, len(all), workers...)
	wg.Wait()
	wantEach(t, `subscription "workers"`, got, all)

	seq := consumeAll(t, len(all), audit)
	wantEach(t, `subscription "audit"`, seq, all)
	last := map[string]string{}
	for _, d := range seq[0] {
		p := d[:strings.IndexByte(d, '-')]
		if d < last[p] {
			t.Fatalf(`subscription "audit", one consumer: %q came after %q, want each producer's order`, d, last[p])
		}
		last[p] = d
	}
	expectNone(t, workers[0], 200*time.Millisecond)
	expectNone(t, audit, 200*time.Millisecond)
}

// testEnqueueVariantsFanOut: every kind of enqueue, on any handle of the
// topic, publishes to all its subscriptions.
func testEnqueueVariantsFanOut(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ctx := context.Background()
	ps := newPubSub(t, h, Config{MaxDataSize: 64})
	a, b := subscribe(t, ps, "variants", "a"), subscribe(t, ps, "variants", "b")
	both := map[string]pubsub.Topic{"a": a, "b": b}

	enqueue(t, a, "through a's handle")
	receive(t, both, "through a's handle")

	if h.Abilities.Batch {
		if err := pubsub.EnqueueBatch(ctx, b, [][]byte{[]byte("b1"), []byte("b2"), []byte("b3")}); err != nil {
			t.Fatalf("EnqueueBatch: %v", err)
		}
		receive(t, both, "b1", "b2", "b3")
		bad := [][]byte{[]byte("fine"), make([]byte, 65)}
		wantErr(t, "EnqueueBatch with an item over the limit", pubsub.EnqueueBatch(ctx, a, bad), pubsub.ErrTooLarge)
	}
	if h.Abilities.Delay {
		const delay = 300 * time.Millisecond
		start := time.Now()
		if err := pubsub.EnqueueDelayed(ctx, a, []byte("later"), delay); err != nil {
			t.Fatalf("EnqueueDelayed: %v", err)
		}
		receive(t, both, "later")
		atLeast(t, "the delayed copies", start, delay)
	}
	if h.Abilities.Unique {
		add := func(tp pubsub.Topic, data string, want bool) {
			t.Helper()
			ok, err := pubsub.EnqueueUnique(ctx, tp, "tick", []byte(data))
			if err != nil || ok != want {
				t.Fatalf("EnqueueUnique(%q, %q) = %v, %v; want %v, nil", "tick", data, ok, err, want)
			}
		}
		add(a, "tick 1", true)
		add(b, "tick 1 again", false) // both subscriptions keep tick 1
		ma, mb := dequeue(t, a), dequeue(t, b)
		wantData(t, ma, "tick 1")
		wantData(t, mb, "tick 1")
		add(a, "tick 1 while processing", false)
		ack(t, ma)
		ack(t, mb)
	}
	expectNone(t, a, 200*time.Millisecond)
	expectNone(t, b, 200*time.Millisecond)
}

// testNackPerSubscription: a nack in one subscription redelivers there
// only; the other's copy is acked and stays so.
func testNackPerSubscription(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	const base = 200 * time.Millisecond
	cfg := Config{Retry: pubsub.RetryPolicy{MaxAttempts: 5, MinBackoff: base, Jitter: -1}, Lease: 10 * time.Second}
	ps := newPubSub(t, h, cfg)
	a, b := subscribe(t, ps, "nack", "a"), subscribe(t, ps, "nack", "b")
	enqueue(t, open(t, ps, "nack"), "x")
	ma, mb := dequeue(t, a), dequeue(t, b)
	if ma.ID() == mb.ID() {
		t.Fatalf("the copies in two subscriptions share the ID %s: copies are distinct messages", ma.ID())
	}
	start := time.Now()
	nack(t, mb)
	ack(t, ma) // the other subscription's copy is untouched by the nack
	again := dequeue(t, b)
	atLeast(t, "the redelivery in the nacking subscription", start, base)
	if again.ID() != mb.ID() {
		t.Fatalf("redelivery has ID %q, want %q", again.ID(), mb.ID())
	}
	wantData(t, again, "x")
	wantAttempt(t, h, again, 2)
	expectNone(t, a, 2*base) // acked there: nothing comes back
	ack(t, again)
	expectNone(t, b, 2*base)
}

// testDeadPerSubscription: each subscription rejects a different message;
// each keeps its own dead copy, and the other's copy is still delivered
// and ackable.
func testDeadPerSubscription(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.Reject && h.Abilities.DeadLetters, "reject and dead letters (pubsub.Rejecter, admin.DeadLetters)")
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	a, b := subscribe(t, ps, "dead-subs", "a"), subscribe(t, ps, "dead-subs", "b")
	enqueue(t, open(t, ps, "dead-subs"), "bad for a", "bad for b", "fine")
	reject := func(tp pubsub.Topic, data string) pubsub.Message {
		t.Helper()
		m := dequeue(t, tp)
		wantData(t, m, data)
		if err := pubsub.Reject(ctx, m, errors.New("cannot")); err != nil {
			t.Fatalf("Reject: %v", err)
		}
		return m
	}
	deadA := reject(a, "bad for a")
	receive(t, map[string]pubsub.Topic{"b": b}, "bad for a") // dead in a, delivered and acked in b
	receive(t, map[string]pubsub.Topic{"a": a}, "bad for b")
	deadB := reject(b, "bad for b")

	for sub, c := range map[string]struct {
		tp   pubsub.Topic
		dead pubsub.Message
	}{"a": {a, deadA}, "b": {b, deadB}} {
		if dead := deadLetters(t, c.tp); len(dead) != 1 || dead[0].ID != c.dead.ID() || string(dead[0].Data) != string(c.dead.Data()) {
			t.Fatalf("ListDead of %s: %+v, want its one dead copy, %s %q", sub, dead, c.dead.ID(), c.dead.Data())
		}
		if !h.Abilities.Stats {
			continue
		}
		s, err := admin.TopicStats(ctx, c.tp)
		if err != nil {
			t.Fatalf("Stats of %s: %v", sub, err)
		}
		if s.Dead != 1 || s.Ready+s.Processing != 1 || s.Scheduled != 0 {
			t.Fatalf("Stats of %s = %+v, want 1 dead and 1 ready (fine)", sub, s)
		}
	}
	wantErr(t, "RequeueDead in b of a's dead copy", admin.RequeueDead(ctx, b, deadA.ID()), admin.ErrNotFound)
	if err := admin.RequeueDead(ctx, a, deadA.ID()); err != nil {
		t.Fatalf("RequeueDead in a: %v", err)
	}
	got := map[string]bool{}
	for range 2 { // a requeued message comes back in no fixed order
		m := dequeue(t, a)
		got[string(m.Data())] = true
		ack(t, m)
	}
	if !got["fine"] || !got["bad for a"] {
		t.Fatalf("a got %v after the requeue, want fine and bad for a", got)
	}
	receive(t, map[string]pubsub.Topic{"b": b}, "fine")
	if dead := deadLetters(t, b); len(dead) != 1 || dead[0].ID != deadB.ID() {
		t.Fatalf("ListDead of b after a's requeue: %+v, want its own dead copy %s", dead, deadB.ID())
	}
	expectNone(t, a, 200*time.Millisecond)
	expectNone(t, b, 200*time.Millisecond)
}

// testDeleteSubscription: DeleteSubscription removes the subscription and
// every copy it has not settled (ready, scheduled, in flight, dead), and
// nothing of the others.
func testDeleteSubscription(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	const lease = 300 * time.Millisecond
	ctx := context.Background()
	ps := newPubSub(t, h, Config{Lease: lease})
	const topic = "delete"
	subs := map[string]pubsub.Topic{}
	for _, name := range []string{"zeta", "alpha", "mid"} {
		subs[name] = subscribe(t, ps, topic, name)
	}
	wantSubscriptions(t, ps, topic, "alpha", "mid", "zeta")
	want := []string{"1", "2", "3"}
	enqueue(t, open(t, ps, topic), want...)
	if h.Abilities.Delay {
		if err := pubsub.EnqueueDelayed(ctx, subs["alpha"], []byte("4"), lease); err != nil {
			t.Fatalf("EnqueueDelayed: %v", err)
		}
		want = append(want, "4")
	}
	mid := subs["mid"]
	inflight := dequeue(t, mid) // never settled before the delete
	if h.Abilities.Reject {
		if err := pubsub.Reject(ctx, dequeue(t, mid), errors.New("dead when deleted")); err != nil {
			t.Fatalf("Reject: %v", err)
		}
	}

	if err := admin.DeleteSubscription(ctx, ps, topic, "mid"); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}
	wantSubscriptions(t, ps, topic, "alpha", "zeta")
	again := subscribe(t, ps, topic, "mid")
	wantSubscriptions(t, ps, topic, "alpha", "mid", "zeta")
	// Past the in-flight copy's lease and the delayed copy's time, none
	// of the deleted copies reaches the new subscription of that name.
	expectNone(t, again, 4*lease)
	if h.Abilities.DeadLetters {
		if dead := deadLetters(t, again); len(dead) != 0 {
			t.Fatalf("ListDead after the delete: %+v, want none", dead)
		}
	}
	if err := inflight.Ack(ctx); err != nil && !errors.Is(err, pubsub.ErrLeaseExpired) {
		t.Fatalf("Ack of a delivery of a deleted subscription: %v, want nil or ErrLeaseExpired", err)
	}
	receive(t, map[string]pubsub.Topic{"alpha": subs["alpha"], "zeta": subs["zeta"]}, want...)

	if err := admin.DeleteSubscription(ctx, ps, topic, "mid"); err != nil {
		t.Fatalf("DeleteSubscription of the new mid: %v", err)
	}
	err := admin.DeleteSubscription(ctx, ps, topic, "mid")
	wantErr(t, "DeleteSubscription twice", err, pubsub.ErrNoSubscription)
	wantSubscriptions(t, ps, topic, "alpha", "zeta")
}

// testDequeueDeleted: a Dequeue on a handle of a named subscription
// deleted through the same PubSub returns ErrNoSubscription, whether it
// was waiting when the delete came or called after it.
func testDequeueDeleted(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	dequeueAfterDelete(t, ps, ps)
}

// testDequeueDeletedElsewhere: the same, the subscription deleted by
// another process (another PubSub on the same store).
func testDequeueDeletedElsewhere(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.Shared, "sharing across processes (Abilities.Shared)")
	one := newPubSub(t, h, Config{})
	dequeueAfterDelete(t, one, h.Reopen(t, Config{}, one))
}

// dequeueAfterDelete deletes, through other, a subscription that a handle
// of ps reads: the handle's Dequeue calls, the one waiting then and the
// later ones, return ErrNoSubscription (before their ctx ends) until the
// subscription is created again; the topic's other subscription keeps
// every message.
func dequeueAfterDelete(t *testing.T, ps, other pubsub.PubSub) {
	t.Helper()
	ctx := context.Background()
	const topic = "deleted-while-read"
	gone := subscribe(t, ps, topic, "gone")
	kept := subscribe(t, ps, topic, "kept")
	enqueue(t, open(t, ps, topic), "before")
	if m := dequeue(t, gone); string(m.Data()) != "before" {
		t.Fatalf("Dequeue = %q, want before", m.Data())
	} else if err := m.Ack(ctx); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	blocked := make(chan error, 1)
	go func() {
		m, err := gone.Dequeue(wctx)
		if m != nil {
			err = fmt.Errorf("got message %q", m.Data())
		}
		blocked <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it block; the assertion holds either way
	if err := admin.DeleteSubscription(ctx, other, topic, "gone"); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}
	if err := <-blocked; wctx.Err() != nil {
		t.Fatalf("a Dequeue waiting when its subscription was deleted waited for its ctx to end: %v; want ErrNoSubscription", err)
	} else {
		wantErr(t, "Dequeue waiting when its subscription was deleted", err, pubsub.ErrNoSubscription)
	}

	enqueue(t, open(t, other, topic), "after")
	lctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	m, err := gone.Dequeue(lctx)
	if m != nil {
		t.Fatalf("Dequeue on a deleted subscription got %q", m.Data())
	}
	if lctx.Err() != nil {
		t.Fatalf("Dequeue on a deleted subscription waited for its ctx to end: %v; want ErrNoSubscription", err)
	}
	wantErr(t, "Dequeue on a deleted subscription", err, pubsub.ErrNoSubscription)
	receive(t, map[string]pubsub.Topic{"kept": kept}, "before", "after")

	// Created again (by the other process), the handle reads the new
	// subscription: the messages published since.
	subscribe(t, other, topic, "gone")
	enqueue(t, open(t, other, topic), "again")
	receive(t, map[string]pubsub.Topic{"gone": gone}, "again")
}

func testInvalidSubscriptions(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ps := newPubSub(t, h, Config{})
	direct, ok := pubsub.As[pubsub.Subscriber](ps)
	if !ok {
		t.Fatalf("the backend (%T) is no pubsub.Subscriber", ps)
	}
	// Each call through the package's helpers, and on the backend itself.
	type calls map[string]func(topic, sub string) error
	create := calls{
		"pubsub.Subscribe": func(topic, sub string) error { _, err := pubsub.Subscribe(ctx, ps, topic, sub); return err },
		"Subscribe":        func(topic, sub string) error { _, err := direct.Subscribe(ctx, topic, sub); return err },
	}
	remove := calls{
		"admin.DeleteSubscription": func(topic, sub string) error { return admin.DeleteSubscription(ctx, ps, topic, sub) },
		"DeleteSubscription":       func(topic, sub string) error { return direct.DeleteSubscription(ctx, topic, sub) },
	}
	list := calls{
		"admin.ListSubscriptions": func(topic, _ string) error { _, err := admin.ListSubscriptions(ctx, ps, topic); return err },
		"Subscriptions":           func(topic, _ string) error { _, err := direct.Subscriptions(ctx, topic); return err },
	}
	bad := []string{"", " padded ", strings.Repeat("x", pubsub.MaxTopicNameLen+1), "bad\xffutf8", "tab\tin"}
	for _, cs := range []calls{create, remove} {
		for what, call := range cs {
			for _, name := range bad {
				err := call("topic", name)
				if !errors.Is(err, pubsub.ErrInvalidSubscription) {
					t.Errorf("%s(%q, %q): %v, want ErrInvalidSubscription", what, "topic", name, err)
				} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
					t.Errorf("%s(%q, %q): %q, want the error to name the subscription", what, "topic", name, err)
				}
				if err := call(name, "sub"); !errors.Is(err, pubsub.ErrInvalidTopic) {
					t.Errorf("%s(%q, %q): %v, want ErrInvalidTopic", what, name, "sub", err)
				}
			}
		}
	}
	for what, call := range list {
		for _, name := range bad {
			if err := call(name, ""); !errors.Is(err, pubsub.ErrInvalidTopic) {
				t.Errorf("%s(%q): %v, want ErrInvalidTopic", what, name, err)
			}
		}
	}
	for what, call := range remove {
		err := call("topic", "never-made")
		if !errors.Is(err, pubsub.ErrNoSubscription) {
			t.Errorf("%s(%q, %q) of a subscription never made: %v, want ErrNoSubscription", what, "topic", "never-made", err)
		} else if !strings.Contains(err.Error(), "never-made") {
			t.Errorf("%s(%q, %q): %q, want the error to name the subscription", what, "topic", "never-made", err)
		}
		// The default of a topic never consumed from is no subscription.
		err = call("topic", pubsub.DefaultSubscription)
		wantErr(t, what+" of the default subscription, never consumed from", err, pubsub.ErrNoSubscription)
	}
	wantSubscriptions(t, ps, "topic") // nothing was made
}

func testInbox(t *testing.T, h Harness) {
	need(t, h.Abilities.Inbox, "an inbox (pubsub.Inbox)")
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	one, two := open(t, ps, "inbox"), open(t, ps, "inbox")
	claim := func(tp pubsub.Topic, key string, want bool) func(context.Context) error {
		t.Helper()
		first, release, err := pubsub.Claim(ctx, tp, key)
		if err != nil || first != want || release == nil {
			t.Fatalf("Claim(%q) = %v, release %p, %v; want %v, a release func, nil", key, first, release, err, want)
		}
		return release
	}
	release := claim(one, "event-1", true)
	claim(one, "event-1", false)
	claim(two, "event-1", false) // handles on one subscription share its inbox
	claim(two, "event-2", true)
	if err := release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	claim(two, "event-1", true) // released: the redelivery claims anew
	claim(one, "event-1", false)
	claim(one, "event-2", false) // the release forgot event-1 only

	direct, ok := pubsub.As[pubsub.Inbox](one)
	if !ok {
		t.Fatalf("the topic (%T) is no pubsub.Inbox", one)
	}
	for _, key := range []string{"", strings.Repeat("k", pubsub.MaxKeyLen+1), "bad\xffutf8", "nul\x00in"} {
		_, _, err := pubsub.Claim(ctx, one, key)
		wantErr(t, fmt.Sprintf("pubsub.Claim(%q)", key), err, pubsub.ErrInvalidKey)
		_, _, err = direct.Claim(ctx, key)
		wantErr(t, fmt.Sprintf("Claim(%q)", key), err, pubsub.ErrInvalidKey)
	}
	claim(one, strings.Repeat("k", pubsub.MaxKeyLen), true)
}

func testInboxPerSubscription(t *testing.T, h Harness) {
	need(t, h.Abilities.Inbox && h.Abilities.Subscriptions, "an inbox and subscriptions (pubsub.Inbox, pubsub.Subscriber)")
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	claim := func(tp pubsub.Topic, sub, key string, want bool) {
		t.Helper()
		first, _, err := pubsub.Claim(ctx, tp, key)
		if err != nil || first != want {
			t.Fatalf("Claim(%q) in %s = %v, %v; want %v, nil", key, sub, first, err, want)
		}
	}
	a, b := subscribe(t, ps, "inbox-subs", "a"), subscribe(t, ps, "inbox-subs", "b")
	def := open(t, ps, "inbox-subs")
	claim(a, "a", "k", true)
	claim(b, "b", "k", true)
	claim(def, "the default subscription", "k", true)
	claim(a, "a", "k", false)
	claim(subscribe(t, ps, "inbox-subs", "a"), "a (another handle)", "k", false)
	claim(b, "b", "k", false)
}

func testDurableSubscriptions(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.Durable, "durability (Abilities.Durable)")
	cfg := Config{Lease: 500 * time.Millisecond}
	const topic = "durable-subs"
	one := newPubSub(t, h, cfg)
	kept := subscribe(t, one, topic, "kept")
	enqueue(t, open(t, one, topic), "before")
	if h.Abilities.Inbox {
		if first, _, err := pubsub.Claim(context.Background(), kept, "k"); err != nil || !first {
			t.Fatalf("Claim = %v, %v; want true, nil", first, err)
		}
	}
	_ = kept.Close()
	closeBackend(t, one)

	two := h.Reopen(t, cfg, one)
	wantSubscriptions(t, two, topic, "kept")
	// Published before this process subscribes: it reaches "kept" only
	// if the subscription outlived the first PubSub.
	enqueue(t, open(t, two, topic), "after")
	again := subscribe(t, two, topic, "kept")
	receive(t, map[string]pubsub.Topic{"kept": again}, "before", "after")
	expectNone(t, again, 300*time.Millisecond)
	if h.Abilities.Inbox {
		if first, _, err := pubsub.Claim(context.Background(), again, "k"); err != nil || first {
			t.Fatalf("Claim after reopening = %v, %v; want false (claimed before), nil", first, err)
		}
	}
}

func testSharedSubscriptions(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	need(t, h.Abilities.Shared, "sharing across processes (Abilities.Shared)")
	cfg := Config{}
	const topic = "shared-subs"
	one := newPubSub(t, h, cfg)
	two := h.Reopen(t, cfg, one)
	w1, w2 := subscribe(t, one, topic, "workers"), subscribe(t, two, topic, "workers")
	x, y := subscribe(t, one, topic, "x"), subscribe(t, two, topic, "y")
	for _, ps := range []pubsub.PubSub{one, two} {
		wantSubscriptions(t, ps, topic, "workers", "x", "y")
	}
	msgs := numbered("s", 100)
	enqueue(t, open(t, one, topic), msgs[:50]...)
	enqueue(t, open(t, two, topic), msgs[50:]...)
	wantEach(t, `subscription "workers" on two PubSubs`, consumeAll(t, len(msgs), w1, w2), msgs)
	wantEach(t, `subscription "x"`, consumeAll(t, len(msgs), x), msgs)
	wantEach(t, `subscription "y"`, consumeAll(t, len(msgs), y), msgs)
	for _, tp := range []pubsub.Topic{w1, w2, x, y} {
		expectNone(t, tp, 200*time.Millisecond)
	}
	if h.Abilities.Inbox {
		if first, _, err := pubsub.Claim(context.Background(), w1, "k"); err != nil || !first {
			t.Fatalf("Claim on one = %v, %v; want true, nil", first, err)
		}
		if first, _, err := pubsub.Claim(context.Background(), w2, "k"); err != nil || first {
			t.Fatalf("Claim on two of the key claimed on one = %v, %v; want false, nil", first, err)
		}
	}
}
