package natspubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// With Options.Bind a PubSub makes no stream: before the operator
// provisions the topic every use is ErrNoStream; after, it works, and the
// streams keep the operator's configuration.
func TestBind(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bound := connectTo(t, url, natspubsub.Options{Prefix: prefix, Bind: true, UniqueWindow: 5 * time.Minute})
	tp := bound.Topic("orders")
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, natspubsub.ErrNoStream) {
			t.Errorf("%s before the topic was provisioned: %v, want an error wrapping ErrNoStream", what, err)
		}
	}
	want("Enqueue", tp.Enqueue(ctx, []byte("x")))
	want("EnqueueAt", pubsub.EnqueueAt(ctx, tp, []byte("x"), time.Now().Add(time.Hour)))
	_, _, err := pubsub.Claim(ctx, tp, "k")
	want("Claim", err)
	_, err = tp.Dequeue(ctx)
	want("Dequeue", err)
	if n := streams(t, url, prefix); n != 0 {
		t.Fatalf("a bound PubSub made %d streams", n)
	}

	owner := connectTo(t, url, natspubsub.Options{Prefix: prefix, UniqueWindow: time.Minute})
	if err := owner.Provision(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := tp.Enqueue(ctx, []byte("now")); err != nil {
		t.Fatal(err)
	}
	if err := pubsub.EnqueueDelayed(ctx, tp, []byte("later"), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"now", "later"} {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data()) != data {
			t.Fatalf("got %q, want %q", m.Data(), data)
		}
		if data == "later" {
			if err := pubsub.Reject(ctx, m, errors.New("to the dead letters")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if first, _, err := pubsub.Claim(ctx, tp, "k"); err != nil || !first {
		t.Fatalf("Claim after provisioning = %v, %v; want true, nil", first, err)
	}
	if dead, err := admin.ListDead(ctx, tp, 0); err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %v, %v; want the rejected message", dead, err)
	}
	if d := duplicates(t, url, prefix); d != time.Minute {
		t.Errorf("the topic's duplicate window is %v after the bound PubSub used it, want the operator's 1m0s", d)
	}
}

// streams counts the streams and buckets under prefix.
func streams(t *testing.T, url, prefix string) int {
	t.Helper()
	js := jetStream(t, url)
	n := 0
	names := js.StreamNames(context.Background())
	for name := range names.Name() {
		if strings.HasPrefix(name, prefix) || strings.HasPrefix(name, "KV_"+prefix) {
			n++
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// duplicates returns the duplicate window of the topic stream under prefix.
func duplicates(t *testing.T, url, prefix string) time.Duration {
	t.Helper()
	js := jetStream(t, url)
	list := js.ListStreams(context.Background(), jetstream.WithStreamListSubject(prefix+".t.>"))
	var d time.Duration
	for info := range list.Info() {
		d = info.Config.Duplicates
	}
	if err := list.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

func jetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
