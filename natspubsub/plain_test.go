package natspubsub_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A message published with plain nats.go on natspubsub.Subject of a topic
// in use is delivered as docs/natspubsub.md says: its ID is "seq-" and its
// stream sequence (with a suffix of the subscription on a named one)
// unless it carries a Conveyor-Id, the same on every delivery; the stream
// refuses a second one with its Nats-Msg-Id within the duplicate window;
// only its Conveyor-H- headers make its pubsub.Header; the inbox claims
// its ID once.
func TestPlainPublish(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ps := connectTo(t, url, natspubsub.Options{Prefix: prefix, Retry: pubsub.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(topic string, data, id, msgID string) *jetstream.PubAck {
		t.Helper()
		msg := nats.NewMsg(natspubsub.Subject(prefix, topic))
		msg.Data = []byte(data)
		msg.Header.Set("X-Plain", "not conveyor's")
		msg.Header.Set("Conveyor-H-trace", "abc")
		if id != "" {
			msg.Header.Set("Conveyor-Id", id)
		}
		if msgID != "" {
			msg.Header.Set(jetstream.MsgIDHeader, msgID)
		}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatalf("plain publish of %q: %v", data, err)
		}
		return ack
	}
	dequeue := func(tp pubsub.Topic, want string) pubsub.Message {
		t.Helper()
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatalf("Dequeue, want %q: %v", want, err)
		}
		if string(m.Data()) != want {
			t.Fatalf("Dequeue = %q, want %q", m.Data(), want)
		}
		return m
	}

	t.Run("default subscription", func(t *testing.T) {
		tp := ps.Topic("plain")
		// The topic is in use: its stream and the default subscription's
		// consumer exist once conveyor enqueued.
		if err := tp.Enqueue(ctx, []byte("by conveyor")); err != nil {
			t.Fatal(err)
		}
		first := publish("plain", "plain", "", "once")
		if again := publish("plain", "plain", "", "once"); !again.Duplicate {
			t.Errorf("a second plain publish with Nats-Msg-Id %q was stored (seq %d)", "once", again.Sequence)
		}
		publish("plain", "with an id", "order-7", "")

		if err := dequeue(tp, "by conveyor").Ack(ctx); err != nil {
			t.Fatal(err)
		}
		m := dequeue(tp, "plain")
		wantID := fmt.Sprintf("seq-%d", first.Sequence)
		if m.ID() != wantID {
			t.Errorf("ID = %q, want %q", m.ID(), wantID)
		}
		if h, want := pubsub.MessageHeader(m), (pubsub.Header{"trace": "abc"}); !maps.Equal(h, want) {
			t.Errorf("header = %v, want %v", h, want)
		}
		if ok, _, err := pubsub.Claim(ctx, tp, m.ID()); err != nil || !ok {
			t.Fatalf("first Claim of %q = %v, %v; want true", m.ID(), ok, err)
		}
		if err := m.Nack(ctx); err != nil {
			t.Fatal(err)
		}
		// Next come the message with an ID and the redelivery, in either
		// order.
		for range 2 {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch string(m.Data()) {
			case "with an id":
				if m.ID() != "order-7" {
					t.Errorf("ID = %q, want the Conveyor-Id it was published with, %q", m.ID(), "order-7")
				}
			case "plain":
				if m.ID() != wantID || pubsub.Attempt(m) != 2 {
					t.Errorf("redelivery: ID %q attempt %d, want %q attempt 2", m.ID(), pubsub.Attempt(m), wantID)
				}
				if ok, _, err := pubsub.Claim(ctx, tp, m.ID()); err != nil || ok {
					t.Errorf("Claim of the redelivery = %v, %v; want false (claimed already)", ok, err)
				}
			default:
				t.Errorf("Dequeue = %q, want %q or %q", m.Data(), "with an id", "plain")
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		short, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer scancel()
		if m, err := tp.Dequeue(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a further Dequeue = %v, %v; want nothing (the duplicate was not stored)", m, err)
		}
	})

	t.Run("named subscription", func(t *testing.T) {
		audit, err := ps.Subscribe(ctx, "plain-named", "audit")
		if err != nil {
			t.Fatal(err)
		}
		ack := publish("plain-named", "plain", "", "")
		m := dequeue(audit, "plain")
		if want := fmt.Sprintf("seq-%d.", ack.Sequence); !strings.HasPrefix(m.ID(), want) || len(m.ID()) == len(want) {
			t.Errorf("ID = %q, want %q and the subscription's suffix", m.ID(), want)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("topic not in use", func(t *testing.T) {
		// No stream listens on the subject: JetStream has no responder.
		_, err := js.Publish(ctx, natspubsub.Subject(prefix, "never used"), []byte("x"))
		if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("plain publish on a topic never used: %v, want no responders", err)
		}
	})
}
