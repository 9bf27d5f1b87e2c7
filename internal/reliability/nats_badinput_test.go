package reliability

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// natsLacks are the shared bad-input cases that ask NATS for what it does
// not offer (natspubsub's doc.go, pubsubtest.Abilities): they are not run
// on it, and TestNatsBadInput says so in its log.
var natsLacks = map[string]string{
	"batch with one item over the limit": "an all-or-none batch enqueue (JetStream 2.9 has no atomic batch)",
}

// natsStore is a fresh natspubsub backend for a bad-input case, on a
// prefix of its own.
func natsStore(t testing.TB, url string, c config) store {
	opts := natspubsub.Options{Prefix: natstest.Prefix(t, url), Lease: c.Lease, Retry: c.Retry, MaxDataSize: c.MaxDataSize}
	ps := natsConnect(t, url, opts)
	return store{ps: ps, reopen: func(t testing.TB) pubsub.PubSub { return natsConnect(t, url, opts) }}
}

// Bad input on NATS: the shared cases of TestBadInput (names, data,
// messages, topics, events), then what is NATS's own: subscription names,
// names that mean something in NATS subjects, payloads over the server's
// max_payload, and every call on a closed PubSub. Each is answered with
// package pubsub's sentinel errors, matched with errors.Is, and loses
// nothing.
func TestNatsBadInput(t *testing.T) {
	url := natstest.URL(t)
	for _, c := range backendCases() {
		if why, ok := natsLacks[c.name]; ok {
			t.Logf("shared case %q not run: NATS lacks %s", c.name, why)
			continue
		}
		t.Run("shared/"+c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := natsStore(t, url, config{Lease: badLease, MaxDataSize: badLimit,
				Retry: pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: 10 * time.Millisecond}})
			checkErr(t, c.run(t, ctx, s), c.want, c.msg)
		})
	}
	for _, c := range natsCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := natsStore(t, url, config{Lease: badLease})
			checkErr(t, c.run(t, ctx, s), c.want, c.msg)
		})
	}
	t.Run("payload over the server's max_payload", natsOverMaxPayload)
}

func natsCases() []backendCase {
	subscribe := func(topic, sub string) func(*testing.T, context.Context, store) error {
		return func(t *testing.T, ctx context.Context, s store) error {
			_, err := s.ps.(pubsub.Subscriber).Subscribe(ctx, topic, sub)
			return err
		}
	}
	// closed returns the error of call on a PubSub closed after a
	// subscription was made.
	closed := func(call func(ctx context.Context, ps *natspubsub.PubSub) error) func(*testing.T, context.Context, store) error {
		return func(t *testing.T, ctx context.Context, s store) error {
			ps := s.ps.(*natspubsub.PubSub)
			if _, err := ps.Subscribe(ctx, "t", "s"); err != nil {
				t.Fatal(err)
			}
			if err := ps.Close(); err != nil {
				t.Fatal(err)
			}
			return call(ctx, ps)
		}
	}
	return []backendCase{
		// Subscription names.
		{name: "subscribe: topic name empty", run: subscribe("", "s"), want: pubsub.ErrInvalidTopic, msg: "empty"},
		{name: "subscribe: subscription name empty", run: subscribe("t", ""), want: pubsub.ErrInvalidSubscription, msg: "empty"},
		{name: "subscribe: subscription name white space", run: subscribe("t", " s"), want: pubsub.ErrInvalidSubscription, msg: "white space"},
		{name: "subscribe: subscription name over the limit", run: subscribe("t", strings.Repeat("s", pubsub.MaxTopicNameLen+1)),
			want: pubsub.ErrInvalidSubscription, msg: "the limit is"},
		{name: "subscribe: subscription name not UTF-8", run: subscribe("t", "s\xff"), want: pubsub.ErrInvalidSubscription, msg: "UTF-8"},
		{name: "subscribe: subscription name with a control character", run: subscribe("t", "s\nt"),
			want: pubsub.ErrInvalidSubscription, msg: "control character"},
		{name: "subscriptions of a bad topic", run: func(t *testing.T, ctx context.Context, s store) error {
			_, err := s.ps.(pubsub.Subscriber).Subscriptions(ctx, "")
			return err
		}, want: pubsub.ErrInvalidTopic, msg: "empty"},
		{name: "delete a subscription with a bad name", run: func(t *testing.T, ctx context.Context, s store) error {
			return s.ps.(pubsub.Subscriber).DeleteSubscription(ctx, "t", "")
		}, want: pubsub.ErrInvalidSubscription, msg: "empty"},
		{name: "delete a subscription never made", run: func(t *testing.T, ctx context.Context, s store) error {
			if err := s.ps.Topic("t").Enqueue(ctx, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			err := s.ps.(pubsub.Subscriber).DeleteSubscription(ctx, "t", "nobody")
			if err := roundTripNext(ctx, s.ps.Topic("t"), "kept"); err != nil {
				t.Error(err)
			}
			return err
		}, want: pubsub.ErrNoSubscription, msg: "nobody"},
		{name: "dequeue on a subscription deleted by another process", run: func(t *testing.T, ctx context.Context, s store) error {
			sub, err := s.ps.(pubsub.Subscriber).Subscribe(ctx, "t", "s")
			if err != nil {
				t.Fatal(err)
			}
			if err := sub.Enqueue(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			other := s.reopen(t).(pubsub.Subscriber)
			if err := other.DeleteSubscription(ctx, "t", "s"); err != nil {
				t.Fatal(err)
			}
			_, err = sub.Dequeue(ctx)
			return err
		}, want: pubsub.ErrNoSubscription, msg: `"s"`},
		// Names that are wildcards, separators or white space in NATS
		// subjects are data to conveyor: they round-trip, and reach no
		// other topic or subscription.
		{name: "names with NATS subject syntax", run: func(t *testing.T, ctx context.Context, s store) error {
			sb := s.ps.(pubsub.Subscriber)
			for _, n := range [][2]string{{"a.b", "s.t"}, {"*", ">"}, {">", "*"}, {"a b", "c d"}, {"a.*.>", "$JS.API"}} {
				sub, err := sb.Subscribe(ctx, n[0], n[1])
				if err != nil {
					return err
				}
				if err := roundTrip(t, ctx, sub, []byte(n[0]+"|"+n[1])); err != nil {
					return err
				}
			}
			// Every topic and subscription got its own message only.
			for _, n := range []string{"a", "b", "a.b.c", "*"} {
				if st, err := admin.TopicStats(ctx, s.ps.Topic(n)); err != nil || st != (admin.Stats{}) {
					t.Errorf("topic %q holds %+v (%v), want nothing", n, st, err)
				}
			}
			return nil
		}},
		{name: "enqueue in a transaction", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("t")
			err := tp.Enqueue(pubsub.WithTx(ctx, struct{}{}), []byte("x"))
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrUnsupported, msg: "transaction"},
		// A closed PubSub.
		{name: "closed: Topic.Enqueue", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			return ps.Topic("t").Enqueue(ctx, []byte("x"))
		}), want: pubsub.ErrClosed, msg: `topic "t"`},
		{name: "closed: Topic.Dequeue", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			_, err := ps.Topic("t").Dequeue(ctx)
			return err
		}), want: pubsub.ErrClosed, msg: `topic "t"`},
		{name: "closed: Subscribe", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			_, err := ps.Subscribe(ctx, "t", "s")
			return err
		}), want: pubsub.ErrClosed, msg: "closed"},
		{name: "closed: Subscriptions", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			_, err := ps.Subscriptions(ctx, "t")
			return err
		}), want: pubsub.ErrClosed, msg: "closed"},
		{name: "closed: DeleteSubscription", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			return ps.DeleteSubscription(ctx, "t", "s")
		}), want: pubsub.ErrClosed, msg: "closed"},
		{name: "closed: dead letters", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			_, err := admin.ListDead(ctx, ps.Topic("t"), 0)
			return err
		}), want: pubsub.ErrClosed, msg: "closed"},
		{name: "closed: stats", run: closed(func(ctx context.Context, ps *natspubsub.PubSub) error {
			_, err := admin.TopicStats(ctx, ps.Topic("t"))
			return err
		}), want: pubsub.ErrClosed, msg: "closed"},
		{name: "closed while Dequeue waits", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("t")
			time.AfterFunc(100*time.Millisecond, func() { _ = s.ps.(*natspubsub.PubSub).Close() })
			_, err := tp.Dequeue(ctx)
			return err
		}, want: pubsub.ErrClosed, msg: `topic "t"`},
		{name: "closed: Ack and ExtendLease of a delivery in hand", run: func(t *testing.T, ctx context.Context, s store) error {
			_, m := delivered(t, ctx, s, "t")
			if err := s.ps.(*natspubsub.PubSub).Close(); err != nil {
				t.Fatal(err)
			}
			if err := pubsub.ExtendLease(ctx, m, time.Minute); !errors.Is(err, pubsub.ErrClosed) {
				t.Errorf("ExtendLease after Close: %v, want ErrClosed", err)
			}
			// The delivery is not settled: it comes back to the next PubSub.
			err := m.Ack(ctx)
			if err2 := roundTripNext(ctx, s.reopen(t).Topic("t"), "payload"); err2 != nil {
				t.Errorf("after the Ack failed with the PubSub closed: %v", err2)
			}
			return err
		}, want: pubsub.ErrClosed, msg: "ack message"},
	}
}

// natsOverMaxPayload runs on a server of its own whose max_payload is
// small: the PubSub's limit follows it, a payload over it is ErrTooLarge
// before it reaches the server, and one the server refuses because its
// max_payload was lowered while the PubSub ran is ErrTooLarge too.
func natsOverMaxPayload(t *testing.T) {
	t.Parallel()
	const maxPayload = 16 << 10
	srv := startNatsServer(t, maxPayload)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, err := natspubsub.Connect(srv.URL, natspubsub.Options{MaxDataSize: maxPayload}); err == nil ||
		!strings.Contains(err.Error(), "Options.MaxDataSize") {
		t.Errorf("Connect with MaxDataSize the server's max_payload: %v, want an error naming Options.MaxDataSize", err)
	}
	ps := natsConnect(t, srv.URL, natspubsub.Options{Lease: badLease})
	limit := ps.MaxDataSize()
	if limit <= 0 || limit >= maxPayload {
		t.Fatalf("MaxDataSize is %d on a server whose max_payload is %d, want less", limit, maxPayload)
	}
	tp := ps.Topic("big")
	err := tp.Enqueue(ctx, make([]byte, limit+1))
	checkErr(t, err, pubsub.ErrTooLarge, "the limit is")
	empty(t, ctx, tp)
	if err := roundTrip(t, ctx, tp, bytes.Repeat([]byte{'x'}, limit)); err != nil {
		t.Fatalf("a payload of exactly MaxDataSize: %v", err)
	}

	// The operator lowers max_payload and restarts the server; the PubSub
	// reconnects and keeps its limit, over the server's.
	if err := srv.configure(maxPayload / 2); err != nil {
		t.Fatal(err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	for {
		err := tp.Enqueue(ctx, []byte("small"))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the PubSub did not reconnect after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	err = tp.Enqueue(ctx, make([]byte, maxPayload/2+1))
	checkErr(t, err, pubsub.ErrTooLarge, "maximum payload")
	if err := roundTripNext(ctx, tp, "small"); err != nil {
		t.Fatalf("after the refused payload: %v", err)
	}
	empty(t, ctx, tp)
}
