package relay_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/relay"
)

// plainTopic hides every optional ability of the topic it wraps (it has
// no Unwrap): a destination that cannot enqueue under a key, as
// kafkapubsub's.
type plainTopic struct{ pubsub.Topic }

func TestNewRefuses(t *testing.T) {
	mem := channelpubsub.New()
	t.Cleanup(func() { _ = mem.Close() })
	src, dst := mem.Topic("src"), mem.Topic("dst")
	for _, tc := range []struct {
		name     string
		from, to pubsub.Topic
		opts     relay.Options
		want     error
	}{
		{"nil source", nil, dst, relay.Options{Source: "s"}, relay.ErrInvalidOptions},
		{"nil destination", src, nil, relay.Options{Source: "s"}, relay.ErrInvalidOptions},
		{"negative workers", src, dst, relay.Options{Source: "s", Workers: -1}, relay.ErrInvalidOptions},
		{"negative timeout", src, dst, relay.Options{Source: "s", Timeout: -time.Second}, relay.ErrInvalidOptions},
		{"no source, and a source handle without names", src, dst, relay.Options{}, relay.ErrInvalidOptions},
		{"a source too long", src, dst, relay.Options{Source: strings.Repeat("s", relay.MaxSourceLen+1)}, relay.ErrInvalidOptions},
		{"a source with NUL", src, dst, relay.Options{Source: "a\x00b"}, relay.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := relay.New(tc.from, tc.to, tc.opts)
			if !errors.Is(err, tc.want) || r != nil {
				t.Fatalf("New = %v, %v; want an error wrapping %v", r, err, tc.want)
			}
		})
	}
	// A wrapped destination keeps its unique enqueue; one without is
	// taken, with plain enqueues.
	if r, err := relay.New(src, wrapped{dst}, relay.Options{Source: "s"}); err != nil || !r.Unique() {
		t.Fatalf("New with a wrapped destination: %v (Unique: %v, want true)", err, err == nil && r.Unique())
	}
	if r, err := relay.New(src, plainTopic{dst}, relay.Options{Source: "s"}); err != nil || r.Unique() {
		t.Fatalf("New with a destination without unique enqueue: %v (Unique: %v, want false)", err, err == nil && r.Unique())
	}
}

// wrapped wraps a topic and exposes it with Unwrap, as middleware
// does.
type wrapped struct{ pubsub.Topic }

func (w wrapped) Unwrap() pubsub.Topic { return w.Topic }

func TestKey(t *testing.T) {
	// Sources and IDs that would make one key if joined by a colon.
	if a, b := relay.Key("a", "b:c"), relay.Key("a:b", "c"); a == b {
		t.Fatalf("Key(a, b:c) = Key(a:b, c) = %q", a)
	}
	if got, want := relay.Key("orders/default", "42"), "14:orders/default:42"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

// TestRelayCommittedOnly relays messages enqueued in transactions, some
// rolled back, from one dbpubsub topic to another: each committed one
// arrives once, no rolled-back one does, and the source is left with
// every message acked.
func TestRelayCommittedOnly(t *testing.T) {
	t.Parallel()
	_, db := dbpubsubtest.NewStore(t)
	ps := dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet})
	src, dst := ps.Topic("outbox"), ps.Topic("inbox")
	ids := make(chan string, 1)
	r, err := relay.New(&source{Topic: src, ids: ids}, dst, relay.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, r) // relays while the producer writes
	p := produce(t, db, src, "m", 200, 10)
	checkExactlyOnce(t, p, drain(t, dst, len(p.committed)))
	waitFor(t, "the source's messages acked", func() bool {
		s, err := admin.TopicStats(context.Background(), src)
		return err == nil && s == (admin.Stats{})
	})
	if s := r.Stats(); s.Relayed != int64(len(p.committed)) || s.Duplicates+s.Rejected+s.Failed != 0 {
		t.Errorf("Stats = %+v, want %d relayed and nothing else", s, len(p.committed))
	}
	// The default source is the source's topic and subscription.
	ok, err := pubsub.EnqueueUnique(context.Background(), dst, relay.Key("outbox/default", <-ids), []byte("x"))
	if err != nil || ok {
		t.Errorf("EnqueueUnique with the key of a relayed message = %v, %v; want false (the relay's key)", ok, err)
	}
}

// source wraps a source topic (exposing it with Unwrap, as middleware
// does): it records the IDs it hands out, and the Ack of each delivery
// loseAck picks reports success without reaching the store, as if the
// relay died before its Ack.
type source struct {
	pubsub.Topic
	ids     chan string
	loseAck func(pubsub.Message) bool
	lost    atomic.Int64
}

func (s *source) Unwrap() pubsub.Topic { return s.Topic }

func (s *source) Dequeue(ctx context.Context) (pubsub.Message, error) {
	m, err := s.Topic.Dequeue(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case s.ids <- m.ID():
	default:
	}
	return &delivery{Message: m, s: s}, nil
}

type delivery struct {
	pubsub.Message
	s *source
}

func (d *delivery) Unwrap() pubsub.Message { return d.Message }

func (d *delivery) Ack(ctx context.Context) error {
	if d.s.loseAck != nil && d.s.loseAck(d.Message) {
		d.s.lost.Add(1)
		return nil
	}
	return d.Message.Ack(ctx)
}

// TestLostAckIsDuplicate loses the Ack of every message's first delivery,
// as a relay killed between its publish and its Ack would: the source
// hands each out again after its lease, and the destination keeps one
// copy, the second publish reported as a duplicate.
func TestLostAckIsDuplicate(t *testing.T) {
	t.Parallel()
	_, db := dbpubsubtest.NewStore(t)
	lease := time.Second
	ps := dbpubsubtest.New(t, db, dbpubsub.Options{Lease: lease, RescueInterval: lease / 5, Logger: quiet})
	src, dst := ps.Topic("outbox"), ps.Topic("inbox")
	s := &source{Topic: src, loseAck: func(m pubsub.Message) bool { return pubsub.Attempt(m) == 1 }}
	r, err := relay.New(s, dst, relay.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	p := produce(t, db, src, "m", 50, 5)
	runRelay(t, r)
	checkExactlyOnce(t, p, drain(t, dst, len(p.committed)))
	waitFor(t, "the source's messages acked", func() bool {
		st, err := admin.TopicStats(context.Background(), src)
		return err == nil && st == (admin.Stats{})
	})
	// Each lost Ack made one more publish at least (more if a lease ran
	// out on a loaded machine), each a duplicate.
	st, n, lost := r.Stats(), int64(len(p.committed)), s.lost.Load()
	if st.Relayed != n || lost == 0 || st.Duplicates < lost {
		t.Errorf("Stats = %+v with %d acks lost; want %d relayed and at least as many duplicates as acks lost", st, lost, n)
	}
	if got := drain(t, dst, 0); len(got) != 0 {
		t.Errorf("the duplicates reached the destination: %v", got)
	}
}

// destinations are the destinations the tests relay to from dbpubsub:
// each makes a fresh topic, with its backend's default options.
func destinations(t *testing.T) map[string]func(t *testing.T) pubsub.Topic {
	return map[string]func(t *testing.T) pubsub.Topic{
		"dbpubsub": func(t *testing.T) pubsub.Topic {
			_, db := dbpubsubtest.NewStore(t)
			return dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic("inbox")
		},
		"natspubsub": func(t *testing.T) pubsub.Topic {
			url := natstest.URL(t)
			ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: natstest.Prefix(t, url), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			return ps.Topic("inbox")
		},
	}
}

// TestRelayKeepsHeaders relays messages with and without a header from a
// dbpubsub outbox, enqueued in the producer's transaction: each arrives in
// the destination with the header it was enqueued with, or none, plus its
// identity (pubsub.HeaderMessageID: its ID in the source).
func TestRelayKeepsHeaders(t *testing.T) {
	t.Parallel()
	for name, newDest := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, db := dbpubsubtest.NewStore(t)
			src := dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic("outbox")
			dst := newDest(t)
			ctx := context.Background()
			want := map[string]pubsub.Header{
				"traced": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant": " acme "},
				"plain":  nil,
			}
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				for d, h := range want {
					if err := src.Enqueue(pubsub.WithHeader(dbpubsub.WithTx(ctx, tx), h), []byte(d)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r, err := relay.New(src, dst, relay.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			runRelay(t, r)
			for range want {
				dctx, cancel := context.WithTimeout(ctx, patience)
				m, err := dst.Dequeue(dctx)
				cancel()
				if err != nil {
					t.Fatalf("Dequeue from the destination: %v", err)
				}
				got := maps.Clone(pubsub.MessageHeader(m))
				if got[pubsub.HeaderMessageID] == "" {
					t.Errorf("message %q arrived without its identity: header %q", m.Data(), got)
				}
				delete(got, pubsub.HeaderMessageID)
				if w := want[string(m.Data())]; !maps.Equal(got, w) && (len(got) != 0 || len(w) != 0) {
					t.Errorf("message %q arrived with header %q, want %q", m.Data(), got, w)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestTooLargeIsDead relays a message over the destination's size limit
// between two it can take: it is dead in the source with the reason, and
// the others arrive.
func TestTooLargeIsDead(t *testing.T) {
	t.Parallel()
	for name, newDest := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, db := dbpubsubtest.NewStore(t)
			src := dbpubsubtest.New(t, db, dbpubsub.Options{MaxDataSize: 2 * pubsub.DefaultMaxDataSize, Logger: quiet}).Topic("outbox")
			dst := newDest(t)
			ctx := context.Background()
			big := strings.Repeat("x", pubsub.DefaultMaxDataSize+1) // over both backends' limits
			for _, d := range []string{"before", big, "after"} {
				if err := src.Enqueue(ctx, []byte(d)); err != nil {
					t.Fatal(err)
				}
			}
			r, err := relay.New(src, dst, relay.Options{Workers: 1, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			runRelay(t, r)
			got := drain(t, dst, 2)
			if got["before"] != 1 || got["after"] != 1 {
				t.Errorf("destination got %d messages, want before and after once", len(got))
			}
			var dead []admin.DeadMessage
			waitFor(t, "the large message dead in the source", func() bool {
				dead, err = admin.ListDead(ctx, src, 0)
				return err == nil && len(dead) > 0
			})
			if len(dead) != 1 || string(dead[0].Data) != big || !strings.Contains(dead[0].LastError, "too large") || dead[0].Attempts != 1 {
				t.Errorf("dead in the source: %d messages (the first with reason %q); want the large message, once delivered, with its reason",
					len(dead), dead[0].LastError)
			}
			if st := r.Stats(); st.Rejected != 1 || st.Relayed != 2 {
				t.Errorf("Stats = %+v, want 2 relayed and 1 rejected", st)
			}
		})
	}
}

// TestClosedDestination stops Run with pubsub.ErrClosed, and gives the
// message in hand back to the source.
func TestClosedDestination(t *testing.T) {
	t.Parallel()
	for name, newDest := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, db := dbpubsubtest.NewStore(t)
			src := dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic("outbox")
			dst := newDest(t)
			ctx := context.Background()
			if err := src.Enqueue(ctx, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			r, err := relay.New(src, dst, relay.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := dst.Close(); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, patience)
			defer cancel()
			if err := r.Run(rctx); !errors.Is(err, pubsub.ErrClosed) {
				t.Fatalf("Run with a closed destination = %v, want an error wrapping pubsub.ErrClosed", err)
			}
			st, err := admin.TopicStats(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			if st.Scheduled != 1 || st.Dead != 0 {
				t.Errorf("source after Run: %+v; want the message back, waiting for its retry", st)
			}
		})
	}
}

// failing is a destination whose first publishes fail with err, before
// it passes them on; it implements pubsub.UniqueEnqueuer itself, so it is
// found before what it wraps.
type failing struct {
	pubsub.Topic
	err   error
	fails atomic.Int64 // failures left
}

func (f *failing) Unwrap() pubsub.Topic { return f.Topic }

func (f *failing) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if f.fails.Add(-1) >= 0 {
		return false, f.err
	}
	return pubsub.EnqueueUnique(ctx, f.Topic, key, data)
}

var errPoison = errors.New("the destination's schema refuses this message")

// TestDestinationErrors: a failed publish gives the message back to the
// source, which retries it after its backoff; one that Options.Permanent
// calls permanent makes it dead at once.
func TestDestinationErrors(t *testing.T) {
	t.Parallel()
	permanent := func(err error) bool { return errors.Is(err, errPoison) }
	for _, tc := range []struct {
		name        string
		err         error
		fails       int64
		wantRelayed int64
		wantDead    int
	}{
		{"transient, retried", errors.New("the server is busy"), 3, 1, 0},
		{"permanent by Options.Permanent", errPoison, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, db := dbpubsubtest.NewStore(t)
			retry := pubsub.RetryPolicy{MinBackoff: 50 * time.Millisecond, Jitter: -1}
			ps := dbpubsubtest.New(t, db, dbpubsub.Options{Retry: retry, Logger: quiet})
			src := ps.Topic("outbox")
			dst := &failing{Topic: ps.Topic("inbox"), err: tc.err}
			dst.fails.Store(tc.fails)
			ctx := context.Background()
			if err := src.Enqueue(ctx, []byte("m")); err != nil {
				t.Fatal(err)
			}
			r, err := relay.New(src, dst, relay.Options{Permanent: permanent, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			runRelay(t, r)
			waitFor(t, "the message settled for good", func() bool {
				st := r.Stats()
				return st.Relayed+st.Rejected == 1
			})
			got := drain(t, dst, int(tc.wantRelayed))
			dead, err := admin.ListDead(ctx, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			st := r.Stats()
			if st.Relayed != tc.wantRelayed || len(got) != int(tc.wantRelayed) || len(dead) != tc.wantDead {
				t.Errorf("Stats = %+v, destination got %v, %d dead in the source; want %d relayed, %d dead",
					st, got, len(dead), tc.wantRelayed, tc.wantDead)
			}
			if tc.wantDead == 1 && (dead[0].LastError != errPoison.Error() || dead[0].Attempts != 1) {
				t.Errorf("dead message %+v, want it with its reason %q after one delivery", dead[0], errPoison)
			}
			if tc.wantDead == 0 && st.Failed != tc.fails {
				t.Errorf("Stats.Failed = %d, want %d", st.Failed, tc.fails)
			}
		})
	}
}

// TestRunTwice refuses a second Run while the first runs.
func TestRunTwice(t *testing.T) {
	mem := channelpubsub.New()
	t.Cleanup(func() { _ = mem.Close() })
	r, err := relay.New(mem.Topic("src"), mem.Topic("dst"), relay.Options{Source: "src"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- r.Run(ctx) }()
	}
	// One Run relays until ctx ends; the other returns at once.
	if err := <-done; !errors.Is(err, relay.ErrRunning) {
		t.Errorf("the second Run = %v, want an error wrapping ErrRunning", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after its ctx ended = %v, want nil", err)
	}
}
