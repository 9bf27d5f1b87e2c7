package kafkapubsub_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Bad input of Kafka's own (the suite checks conveyor's: invalid names,
// the size limit, a closed topic handle; TestNewRefusesBadOptions the
// options): names Kafka refuses as its topics' and groups', a record over
// the Kafka topic's max.message.bytes, and every call on a closed PubSub.
func TestBadInput(t *testing.T) {
	brokers := kafkapubsubtest.Brokers(t)
	t.Run("NamesKafkaRefuses", func(t *testing.T) {
		t.Parallel()
		namesKafkaRefuses(t, brokers)
	})
	t.Run("OverTheTopicsMaxMessageBytes", func(t *testing.T) {
		t.Parallel()
		overMaxMessageBytes(t, brokers)
	})
	for _, mode := range modes {
		t.Run("ClosedPubSub/"+mode.name, func(t *testing.T) {
			t.Parallel()
			closedPubSub(t, brokers, mode.groups)
		})
	}
}

// namesKafkaRefuses: topic and subscription names that Kafka refuses as
// a topic's or a group's name (not its characters, too long once
// prefixed, "." and "..", and "a.b" beside "a_b", which collide in
// Kafka's metrics) are data to conveyor: each pair round-trips a message,
// and each subscription gets its own message only.
func namesKafkaRefuses(t *testing.T, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	ps := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers)})
	names := []string{".", "..", "a.b", "a_b", "orders/eu", "tenant:42", "white space", "名前", `back\slash`,
		strings.Repeat("n", pubsub.MaxTopicNameLen)}
	subs := map[string]pubsub.Topic{}
	for _, name := range names {
		sub, err := pubsub.Subscribe(ctx, ps, name, name)
		if err != nil {
			t.Fatalf("Subscribe(%q, %q): %v", name, name, err)
		}
		subs[name] = sub
		if err := sub.Enqueue(ctx, []byte(name)); err != nil {
			t.Fatalf("Enqueue on topic %q: %v", name, err)
		}
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			m, err := subs[name].Dequeue(ctx)
			if err != nil {
				t.Errorf("Dequeue on %q: %v", name, err)
				return
			}
			if string(m.Data()) != name {
				t.Errorf("subscription %q of topic %q got %q, want its own message", name, name, m.Data())
			}
			if err := m.Ack(ctx); err != nil {
				t.Errorf("Ack on %q: %v", name, err)
			}
			// Nothing more: no other topic's message reached it.
			nctx, ncancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer ncancel()
			if m, err := subs[name].Dequeue(nctx); err == nil {
				t.Errorf("subscription %q of topic %q got %q too", name, name, m.Data())
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Dequeue on %q with nothing there: %v, want context.DeadlineExceeded", name, err)
			}
		})
	}
	wg.Wait()
}

// overMaxMessageBytes: a Kafka topic provisioned with a max.message.bytes
// below the PubSub's MaxDataSize refuses a message over it, delayed or
// not, with pubsub.ErrTooLarge naming it, before it is sent (a delayed one
// would else be refused only when due, and never delivered); when the
// limit was lowered after the PubSub read it, the cluster refuses the
// record, with pubsub.ErrTooLarge too. Nothing refused is delivered, and
// the enqueues after it go on.
func overMaxMessageBytes(t *testing.T, brokers []string) {
	const topicMax = 4 << 10
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	ps := openGroup(t, kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers)})
	if ps.MaxDataSize() <= 4*topicMax {
		t.Fatalf("MaxDataSize is %d: the test needs it well over the topic's %d", ps.MaxDataSize(), topicMax)
	}
	adm := kadm.NewClient(newClient(t, brokers))
	limit := strconv.Itoa(topicMax)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"max.message.bytes": &limit}, ps.LogTopic("small"))
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("provisioning the Kafka topic: %v", err)
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b) // incompressible: the cluster's limit is on the compressed batch
		return b
	}
	tp := ps.Topic("small")
	for what, enqueue := range map[string]func() error{
		"Enqueue": func() error { return tp.Enqueue(ctx, random(2*topicMax)) },
		"EnqueueAt": func() error {
			return pubsub.EnqueueAt(ctx, tp, random(2*topicMax), time.Now().Add(100*time.Millisecond))
		},
	} {
		if err := enqueue(); !errors.Is(err, pubsub.ErrTooLarge) || !strings.Contains(err.Error(), "max.message.bytes") {
			t.Errorf("%s over the topic's max.message.bytes: %v, want pubsub.ErrTooLarge naming max.message.bytes", what, err)
		}
	}
	if err := tp.Enqueue(ctx, random(topicMax/2)); err != nil {
		t.Fatalf("Enqueue of half the topic's limit: %v", err)
	}
	// The operator lowers the limit: the cluster refuses.
	lower := strconv.Itoa(topicMax / 4)
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &lower}}, ps.LogTopic("small"))
	if err == nil {
		err = altered[0].Err
	}
	if err != nil {
		t.Fatalf("lowering the topic's max.message.bytes: %v", err)
	}
	err = tp.Enqueue(ctx, random(topicMax/2))
	if !errors.Is(err, pubsub.ErrTooLarge) || !strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") {
		t.Errorf("Enqueue over the topic's lowered max.message.bytes: %v, want pubsub.ErrTooLarge naming Kafka's MESSAGE_TOO_LARGE", err)
	}
	if err := pubsub.EnqueueAt(ctx, tp, []byte("after"), time.Now().Add(200*time.Millisecond)); err != nil {
		t.Fatalf("EnqueueAt after the refused ones: %v", err)
	}
	for _, want := range []int{topicMax / 2, len("after")} {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Data()) != want {
			t.Fatalf("got %d bytes, want %d: the refused messages are not delivered", len(m.Data()), want)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// closedPubSub: every call on a closed PubSub returns an error wrapping
// pubsub.ErrClosed, a Dequeue waiting when it closed too; a delivery in
// hand is not settled by a call after Close, and comes back to the next
// PubSub, as does the message not yet delivered.
func closedPubSub(t *testing.T, brokers []string, groups bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	opts := kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), ConsumerGroups: groups,
		SessionTimeout: 6 * time.Second}
	ps, err := kafkapubsub.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := pubsub.Subscribe(ctx, ps, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"in hand", "waiting"} {
		if err := sub.Enqueue(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := sub.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data()) != "in hand" {
		t.Fatalf("got %q, want the first message", m.Data())
	}
	other, err := pubsub.Subscribe(ctx, ps, "idle", "s")
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := other.Dequeue(ctx)
		blocked <- err
	}()
	<-started
	if err := ps.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-blocked; !errors.Is(err, pubsub.ErrClosed) {
		t.Errorf("Dequeue waiting when the PubSub closed: %v, want ErrClosed", err)
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Topic.Enqueue", func() error { return ps.Topic("t").Enqueue(ctx, []byte("x")) }},
		{"Topic.Dequeue", func() error { _, err := ps.Topic("t").Dequeue(ctx); return err }},
		{"subscription's Enqueue", func() error { return sub.Enqueue(ctx, []byte("x")) }},
		{"subscription's Dequeue", func() error { _, err := sub.Dequeue(ctx); return err }},
		{"EnqueueAt", func() error { return pubsub.EnqueueAt(ctx, ps.Topic("t"), []byte("x"), time.Now().Add(time.Minute)) }},
		{"Subscribe", func() error { _, err := ps.Subscribe(ctx, "t", "new"); return err }},
		{"Subscriptions", func() error { _, err := ps.Subscriptions(ctx, "t"); return err }},
		{"DeleteSubscription", func() error { return ps.DeleteSubscription(ctx, "t", "s") }},
		{"admin.ListDead", func() error { _, err := admin.ListDead(ctx, sub, 0); return err }},
		{"HasTopic", func() error { _, err := ps.HasTopic(ctx, "t"); return err }},
		{"ExtendLease of a delivery in hand", func() error { return pubsub.ExtendLease(ctx, m, time.Minute) }},
		{"Ack of a delivery in hand", func() error { return m.Ack(ctx) }},
		{"Nack of a delivery in hand", func() error { return m.Nack(ctx) }},
	} {
		if err := c.call(); !errors.Is(err, pubsub.ErrClosed) {
			t.Errorf("%s after Close: %v, want an error wrapping ErrClosed", c.name, err)
		}
	}

	// Nothing was lost: the next PubSub gets both messages (the one in
	// hand again).
	next := openGroup(t, opts)
	nsub, err := pubsub.Subscribe(ctx, next, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		m, err := nsub.Dequeue(ctx)
		if err != nil {
			t.Fatalf("after the Close, got %v of the two messages: %v", got, err)
		}
		got[string(m.Data())] = true
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !got["in hand"] || !got["waiting"] {
		t.Errorf("after the Close the next PubSub got %v, want both messages", got)
	}
}
