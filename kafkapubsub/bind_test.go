package kafkapubsub_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// With Options.Bind a PubSub makes no Kafka topic: before the operator
// provisions a topic every use of it is ErrNoTopic, naming what is
// missing, and nothing is made; after Provision the bound PubSub declares
// the provisioned subscription, enqueues, delays, consumes, nacks through
// the subscription's own log and makes a message dead, and still makes no
// Kafka topic. In both modes.
func TestBind(t *testing.T) {
	for _, groups := range []bool{false, true} {
		t.Run(map[bool]string{false: "share", true: "groups"}[groups], func(t *testing.T) { testBind(t, groups) })
	}
}

func testBind(t *testing.T, groups bool) {
	brokers := kafkapubsubtest.Brokers(t)
	prefix := kafkapubsubtest.Prefix(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	retry := pubsub.RetryPolicy{MaxAttempts: 3, MinBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Jitter: -1}
	// DeliveryLimit 2: in share-group mode the second Nack goes through
	// the subscription's own log (in consumer-group mode each does).
	bound := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, Bind: true, ConsumerGroups: groups,
		Retry: retry, DeliveryLimit: 2, Lease: time.Minute})
	owner := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, ConsumerGroups: groups})
	log := bound.LogTopic("orders")
	noTopic := func(what string, err error, names ...string) {
		t.Helper()
		if !errors.Is(err, kafkapubsub.ErrNoTopic) {
			t.Errorf("%s: %v, want an error wrapping ErrNoTopic", what, err)
			return
		}
		for _, name := range append(names, "Provision") {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: %v, want it to name %s", what, err, name)
			}
		}
	}

	tp := bound.Topic("orders")
	noTopic("Enqueue before Provision", tp.Enqueue(ctx, []byte("x")), log, `"orders"`)
	noTopic("EnqueueDelayed before Provision", pubsub.EnqueueDelayed(ctx, tp, []byte("x"), time.Hour), log)
	dctx, dcancel := context.WithTimeout(ctx, patience)
	defer dcancel()
	_, err := tp.Dequeue(dctx)
	noTopic("Dequeue before Provision", err, log)
	_, err = pubsub.Subscribe(ctx, bound, "orders", "billing")
	noTopic("Subscribe before Provision", err, log)
	if made := kafkaTopics(t, brokers, prefix); len(made) != 0 {
		t.Fatalf("the bound PubSub made Kafka topics %v", made)
	}

	for range 2 { // idempotent
		if err := owner.Provision(ctx, "orders", "billing"); err != nil {
			t.Fatal(err)
		}
	}
	provisioned := kafkaTopics(t, brokers, prefix)
	if len(provisioned) != 5 {
		t.Fatalf("Provision made %v, want 5 Kafka topics: the log, registry and delay log, the subscription's own log and dead log", provisioned)
	}
	if subs, err := bound.Subscriptions(ctx, "orders"); err != nil || len(subs) != 0 {
		t.Errorf("Subscriptions before any Subscribe = %v, %v; want none (a provisioned one is listed once declared)", subs, err)
	}
	_, err = tp.Dequeue(dctx)
	noTopic("Dequeue of the default subscription, not provisioned", err, "default subscription", `"orders"`)
	_, err = pubsub.Subscribe(ctx, bound, "orders", "shipping")
	noTopic("Subscribe of a subscription not provisioned", err, `"shipping"`, `"orders"`)

	billing, err := pubsub.Subscribe(ctx, bound, "orders", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if subs, err := bound.Subscriptions(ctx, "orders"); err != nil || !slices.Equal(subs, []string{"billing"}) {
		t.Errorf("Subscriptions after Subscribe = %v, %v; want [billing]", subs, err)
	}
	if err := tp.Enqueue(ctx, []byte("now")); err != nil {
		t.Fatal(err)
	}
	if err := pubsub.EnqueueDelayed(ctx, tp, []byte("later"), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		m := take(t, billing)
		got = append(got, string(m.Data()))
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Sort(got); !slices.Equal(got, []string{"later", "now"}) {
		t.Fatalf("billing got %q, want now and later", got)
	}

	if err := tp.Enqueue(ctx, []byte("fails")); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= retry.MaxAttempts; want++ {
		m := take(t, billing)
		if string(m.Data()) != "fails" || attempt(t, m) != want {
			t.Fatalf("got %q attempt %d, want \"fails\" attempt %d", m.Data(), attempt(t, m), want)
		}
		if err := m.Nack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := appended(t, brokers, prefix+".r."); n == 0 {
		t.Error("no record in the subscription's own log: the Nacks did not go through it")
	}
	dead, err := admin.ListDead(ctx, billing, 0)
	if err != nil || len(dead) != 1 || string(dead[0].Data) != "fails" || dead[0].Attempts != retry.MaxAttempts {
		t.Fatalf("ListDead = %+v, %v; want the message nacked %d times", dead, err, retry.MaxAttempts)
	}
	if made := kafkaTopics(t, brokers, prefix); !slices.Equal(made, provisioned) {
		t.Errorf("the Kafka topics are %v after the bound PubSub used them, want those provisioned, %v", made, provisioned)
	}

	// Another partition count than the existing log's is reported, and
	// changes nothing.
	other := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, ConsumerGroups: groups, Partitions: 3})
	if err := other.Provision(ctx, "orders"); !errors.Is(err, kafkapubsub.ErrInvalidConfig) || !strings.Contains(err.Error(), log) {
		t.Errorf("Provision with Options.Partitions 3 of a log of 1: %v, want ErrInvalidConfig naming %s", err, log)
	}
	if made := kafkaTopics(t, brokers, prefix); !slices.Equal(made, provisioned) {
		t.Errorf("the refused Provision left Kafka topics %v, want %v", made, provisioned)
	}

	// The default subscription, once provisioned, is the bound PubSub's
	// plain queue.
	if err := owner.Provision(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := tp.Enqueue(ctx, []byte("plain")); err != nil {
		t.Fatal(err)
	}
	m := take(t, tp)
	if string(m.Data()) != "plain" {
		t.Fatalf("the default subscription got %q, want \"plain\"", m.Data())
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if made := kafkaTopics(t, brokers, prefix); len(made) != len(provisioned)+2 {
		t.Errorf("Kafka topics %v, want those provisioned: %v and the default subscription's two", made, provisioned)
	}
}

// Provision checks its arguments and the replication of what exists,
// makes a subscription's deleted Kafka topics again, and a subscription
// it made can be deleted undeclared. Deleting a topic's last subscription
// under Bind leaves it without one: a publish is then ErrNoTopic.
func TestProvision(t *testing.T) {
	brokers := kafkapubsubtest.Brokers(t)
	prefix := kafkapubsubtest.Prefix(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix})
	bound := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, Bind: true})

	if err := owner.Provision(ctx, "bad\x00topic"); !errors.Is(err, pubsub.ErrInvalidTopic) {
		t.Errorf("Provision of a bad topic name: %v, want ErrInvalidTopic", err)
	}
	if err := owner.Provision(ctx, "orders", "bad\x00sub"); !errors.Is(err, pubsub.ErrInvalidSubscription) {
		t.Errorf("Provision of a bad subscription name: %v, want ErrInvalidSubscription", err)
	}
	if made := kafkaTopics(t, brokers, prefix); len(made) != 0 {
		t.Fatalf("a refused Provision made %v", made)
	}

	// kfake replicates each partition on its 3 brokers by default.
	if err := owner.Provision(ctx, "orders", "x"); err != nil {
		t.Fatal(err)
	}
	three := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, Replication: 3})
	if err := three.Provision(ctx, "orders", "x"); err != nil {
		t.Errorf("Provision with the replication the topics have: %v", err)
	}
	one := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: prefix, Replication: 1})
	if err := one.Provision(ctx, "orders", "x"); !errors.Is(err, kafkapubsub.ErrInvalidConfig) || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("Provision with Options.Replication 1 of topics of 3 replicas: %v, want ErrInvalidConfig naming the replicas", err)
	}

	provisioned := kafkaTopics(t, brokers, prefix)
	var own string
	for _, name := range provisioned {
		if strings.HasPrefix(name, prefix+".r.") {
			own = name
		}
	}
	if own == "" {
		t.Fatalf("no own log of subscription x among %v", provisioned)
	}
	deleteTopic(t, brokers, own)
	if err := owner.Provision(ctx, "orders", "x"); err != nil {
		t.Fatal(err)
	}
	if made := kafkaTopics(t, brokers, prefix); !slices.Equal(made, provisioned) {
		t.Errorf("after Provision again the Kafka topics are %v, want %v (the own log made again)", made, provisioned)
	}

	// x was provisioned, never declared: deleted all the same, with its
	// Kafka topics; the topic is left without a subscription.
	if err := bound.DeleteSubscription(ctx, "orders", "x"); err != nil {
		t.Fatalf("DeleteSubscription of a provisioned subscription: %v", err)
	}
	if made := kafkaTopics(t, brokers, prefix); len(made) != len(provisioned)-2 {
		t.Errorf("after DeleteSubscription the Kafka topics are %v, want 3: the bound PubSub makes no reserve", made)
	}
	if err := bound.Topic("orders").Enqueue(ctx, []byte("x")); !errors.Is(err, kafkapubsub.ErrNoTopic) {
		t.Errorf("Enqueue on a topic left without a subscription: %v, want ErrNoTopic", err)
	}

	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	if err := owner.Provision(ctx, "orders"); !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("Provision after Close: %v, want ErrClosed", err)
	}
}

// adminOf returns an admin client of its own on brokers: a client keeps the
// metadata it was answered for a while.
func adminOf(t testing.TB, brokers []string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, brokers))
}

// kafkaTopics returns the Kafka topics under prefix, sorted.
func kafkaTopics(t *testing.T, brokers []string, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	td, err := adminOf(t, brokers).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, name := range td.Names() {
		if strings.HasPrefix(name, prefix+".") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// appended counts the records of the Kafka topics whose names start with
// start.
func appended(t *testing.T, brokers []string, start string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	adm := adminOf(t, brokers)
	prefix, _, _ := strings.Cut(start, ".")
	var n int64
	for _, name := range kafkaTopics(t, brokers, prefix) {
		if !strings.HasPrefix(name, start) {
			continue
		}
		ends, err := adm.ListEndOffsets(ctx, name)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	}
	return n
}

// deleteTopic deletes Kafka topic name.
func deleteTopic(t *testing.T, brokers []string, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	resp, err := adminOf(t, brokers).DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}
