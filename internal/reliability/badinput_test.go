package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// badLimit is the MaxDataSize of the bad-input backends.
const badLimit = 1024

// badLease is their lease.
const badLease = time.Second

// blob is an event whose size the caller chooses.
type blob struct {
	S string `json:"s"`
}

func (blob) Type() event.EventType { return "dev.conveyor.reliability.blob" }

// backendCase is a bad input given to a backend. run returns the error the
// input produced; it checks itself that nothing was lost or corrupted.
// dead, if set, is the reason the message must be kept dead with.
type backendCase struct {
	name string
	run  func(t *testing.T, ctx context.Context, s store) error
	want error  // nil: the input is accepted
	msg  string // the error says what was wrong
	dead string
}

// plainCase is a bad input that needs no backend.
type plainCase struct {
	name string
	run  func(t *testing.T, ctx context.Context) error
	want error
	msg  string
}

// Bad input: every case gets a named error (matched with errors.Is against
// the exported sentinels, its message saying what was wrong) and leaves
// nothing lost or corrupted. The message, topic, data and event cases run
// on both backends.
func TestBadInput(t *testing.T) {
	cases := 0
	for _, b := range backends {
		for _, c := range backendCases() {
			cases++
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				s := b.new(t, config{Lease: badLease, MaxDataSize: badLimit, Capacity: 16,
					Retry: pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: 10 * time.Millisecond}})
				err := c.run(t, ctx, s)
				checkErr(t, err, c.want, c.msg)
			})
		}
	}
	for _, c := range plainCases() {
		cases++
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			checkErr(t, c.run(t, ctx), c.want, c.msg)
		})
	}
	t.Logf("%d bad-input cases (%d distinct inputs)", cases, len(backendCases())+len(plainCases()))
}

func checkErr(t *testing.T, err, want error, msg string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("got error %v, want the input accepted", err)
	case want != nil && !errors.Is(err, want):
		t.Errorf("got error %v, want one matching %v", err, want)
	case want != nil && !strings.Contains(err.Error(), msg):
		t.Errorf("error %q does not say %q", err, msg)
	}
}

// empty checks that tp holds no message at all, within a few seconds: a
// backend whose Ack does not wait for the server (natspubsub by default)
// counts an acked message as processing until the server applied the ack.
func empty(t *testing.T, ctx context.Context, tp pubsub.Topic) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		if st == (admin.Stats{}) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the topic holds %+v after a refused input, want nothing", st)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// roundTrip enqueues data on tp and checks it comes back intact, then acks.
func roundTrip(t *testing.T, ctx context.Context, tp pubsub.Topic, data []byte) error {
	t.Helper()
	if err := tp.Enqueue(ctx, data); err != nil {
		return err
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	if !bytes.Equal(m.Data(), data) || m.Data() == nil && len(data) > 0 {
		t.Errorf("got %d bytes back, want the %d enqueued", len(m.Data()), len(data))
	}
	if m.Data() == nil {
		t.Errorf("Data() is nil, want an empty slice")
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	empty(t, ctx, tp)
	return nil
}

// roundTripNext dequeues the next message of tp, wants data, and acks it.
func roundTripNext(ctx context.Context, tp pubsub.Topic, data string) error {
	m, err := tp.Dequeue(ctx)
	if err != nil {
		return fmt.Errorf("the message is gone: %w", err)
	}
	if string(m.Data()) != data {
		return fmt.Errorf("got %q, want %q", m.Data(), data)
	}
	return m.Ack(ctx)
}

// delivered enqueues one message on a fresh topic and dequeues it.
func delivered(t *testing.T, ctx context.Context, s store, name string) (pubsub.Topic, pubsub.Message) {
	t.Helper()
	tp := s.ps.Topic(name)
	if err := tp.Enqueue(ctx, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tp, m
}

// afterLease waits until m's lease ran out and the message was handed out
// again, and returns the new delivery.
func afterLease(t *testing.T, ctx context.Context, tp pubsub.Topic) pubsub.Message {
	t.Helper()
	m, err := tp.Dequeue(ctx) // blocks until the lease runs out
	if err != nil {
		t.Fatal(err)
	}
	if pubsub.Attempt(m) != 2 {
		t.Errorf("redelivery is attempt %d, want 2", pubsub.Attempt(m))
	}
	return m
}

// serveRaw enqueues raw on topic, runs an event.Service with a listener
// of job on it until the message is dead, and returns its dead letter.
func serveRaw(t *testing.T, ctx context.Context, s store, topic string, raw []byte) admin.DeadMessage {
	t.Helper()
	tp := s.ps.Topic(topic)
	if err := tp.Enqueue(ctx, raw); err != nil {
		t.Fatal(err)
	}
	actx := di.NewContext(ctx)
	defer func() { _ = di.Shutdown(actx) }()
	for _, err := range []error{
		di.RegisterSingleton[pubsub.PubSub](actx, keepOpen{s.ps}),
		pubsub.RegisterTopic(actx),
		event.Register(actx),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	svc, err := event.NewService(topic, event.ServiceOptions{Workers: 1, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	if err := event.ListenFunc(svc, func(context.Context, job) error { handled.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(actx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Shutdown(ctx) }()
	for {
		dead, err := admin.ListDead(ctx, tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == 1 {
			if !bytes.Equal(dead[0].Data, raw) {
				t.Errorf("the dead letter holds %q, want the message as enqueued %q", dead[0].Data, raw)
			}
			if n := handled.Load(); n != 0 {
				t.Errorf("the listener was called %d times for a bad message", n)
			}
			return dead[0]
		}
		if ctx.Err() != nil {
			t.Fatal("the bad message did not end up dead")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func envelope(fields string) []byte {
	return []byte(`{"specversion":"1.0","id":"e1","source":"test"` + fields + `}`)
}

func backendCases() []backendCase {
	enqueue := func(name string) func(*testing.T, context.Context, store) error {
		return func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic(name)
			err := tp.Enqueue(ctx, []byte("x"))
			if _, err2 := tp.Dequeue(ctx); !errors.Is(err2, pubsub.ErrInvalidTopic) {
				t.Errorf("Dequeue on topic %q: %v, want ErrInvalidTopic", name, err2)
			}
			if _, err3 := pubsub.OpenTopic(s.ps, name); !errors.Is(err3, pubsub.ErrInvalidTopic) {
				t.Errorf("OpenTopic(%q): %v, want ErrInvalidTopic", name, err3)
			}
			return err
		}
	}
	closedTopic := func(t *testing.T, s store) pubsub.Topic {
		tp := s.ps.Topic("closed")
		if err := tp.Close(); err != nil {
			t.Fatal(err)
		}
		return tp
	}
	decodeAndServe := func(raw []byte) func(*testing.T, context.Context, store) error {
		return func(t *testing.T, ctx context.Context, s store) error {
			_, err := event.Decode(raw)
			d := serveRaw(t, ctx, s, "events", raw)
			if err != nil && !strings.Contains(d.LastError, err.Error()) {
				t.Errorf("dead letter reason %q, want it to hold the decoding error %q", d.LastError, err)
			}
			return err
		}
	}
	return []backendCase{
		// Topic names.
		{name: "topic name empty", run: enqueue(""), want: pubsub.ErrInvalidTopic, msg: "empty"},
		{name: "topic name white space", run: enqueue(" orders "), want: pubsub.ErrInvalidTopic, msg: "white space"},
		{name: "topic name over the limit", run: enqueue(strings.Repeat("t", pubsub.MaxTopicNameLen+1)),
			want: pubsub.ErrInvalidTopic, msg: fmt.Sprintf("%d bytes, the limit is %d", pubsub.MaxTopicNameLen+1, pubsub.MaxTopicNameLen)},
		{name: "topic name not UTF-8", run: enqueue("orders\xff"), want: pubsub.ErrInvalidTopic, msg: "not valid UTF-8"},
		{name: "topic name with a control character", run: enqueue("a\x00b"), want: pubsub.ErrInvalidTopic, msg: "control character"},
		{name: "topic name with quotes, semicolons and --", run: func(t *testing.T, ctx context.Context, s store) error {
			// Names are data: this one round-trips, and the table survives.
			name := `o'"; DROP TABLE conveyor_events; --`
			if err := roundTrip(t, ctx, s.ps.Topic(name), []byte("safe")); err != nil {
				return err
			}
			return roundTrip(t, ctx, s.ps.Topic("o"), []byte("still here"))
		}},
		{name: "topic name exactly at the limit", run: func(t *testing.T, ctx context.Context, s store) error {
			name := strings.Repeat("é", pubsub.MaxTopicNameLen/2) // 200 bytes of UTF-8
			return roundTrip(t, ctx, s.ps.Topic(name), []byte("at the limit"))
		}},
		// Data.
		{name: "data nil", run: func(t *testing.T, ctx context.Context, s store) error {
			return roundTrip(t, ctx, s.ps.Topic("d"), nil)
		}},
		{name: "data empty", run: func(t *testing.T, ctx context.Context, s store) error {
			return roundTrip(t, ctx, s.ps.Topic("d"), []byte{})
		}},
		{name: "data exactly at the limit", run: func(t *testing.T, ctx context.Context, s store) error {
			data := bytes.Repeat([]byte{0, 0xff, '\'', ';'}, badLimit/4)
			return roundTrip(t, ctx, s.ps.Topic("d"), data)
		}},
		{name: "data one byte over the limit", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("d")
			err := tp.Enqueue(ctx, make([]byte, badLimit+1))
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrTooLarge, msg: fmt.Sprintf("%d bytes, the limit is %d", badLimit+1, badLimit)},
		{name: "batch with one item over the limit", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("d")
			err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("ok"), make([]byte, badLimit+1), []byte("ok")})
			empty(t, ctx, tp) // all or none
			return err
		}, want: pubsub.ErrTooLarge, msg: "batch item 1"},
		// Messages.
		{name: "Ack twice", run: func(t *testing.T, ctx context.Context, s store) error {
			tp, m := delivered(t, ctx, s, "m")
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			err := m.Ack(ctx)
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrSettled, msg: "ack message"},
		{name: "Nack after Ack", run: func(t *testing.T, ctx context.Context, s store) error {
			tp, m := delivered(t, ctx, s, "m")
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			err := m.Nack(ctx)
			empty(t, ctx, tp) // the Ack stands: nothing comes back
			return err
		}, want: pubsub.ErrSettled, msg: "nack message"},
		{name: "Ack after the lease expired", run: func(t *testing.T, ctx context.Context, s store) error {
			tp, m := delivered(t, ctx, s, "m")
			m2 := afterLease(t, ctx, tp)
			err := m.Ack(ctx)
			if err2 := m2.Ack(ctx); err2 != nil {
				t.Errorf("Ack of the current delivery: %v", err2)
			}
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrLeaseExpired, msg: "lease expired"},
		{name: "Nack after the lease expired", run: func(t *testing.T, ctx context.Context, s store) error {
			tp, m := delivered(t, ctx, s, "m")
			m2 := afterLease(t, ctx, tp)
			err := m.Nack(ctx)
			if err2 := m2.Ack(ctx); err2 != nil {
				t.Errorf("Ack of the current delivery: %v", err2)
			}
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrLeaseExpired, msg: "lease expired"},
		{name: "settle after the topic was closed", run: func(t *testing.T, ctx context.Context, s store) error {
			// pubsub: "deliveries already made can still be settled".
			tp, m := delivered(t, ctx, s, "m")
			if err := tp.Close(); err != nil {
				t.Fatal(err)
			}
			err := m.Ack(ctx)
			empty(t, ctx, s.ps.Topic("m"))
			return err
		}},
		// Topics.
		{name: "Enqueue after Close", run: func(t *testing.T, ctx context.Context, s store) error {
			err := closedTopic(t, s).Enqueue(ctx, []byte("x"))
			empty(t, ctx, s.ps.Topic("closed"))
			return err
		}, want: pubsub.ErrClosed, msg: `topic "closed"`},
		{name: "EnqueueBatch after Close", run: func(t *testing.T, ctx context.Context, s store) error {
			err := pubsub.EnqueueBatch(ctx, closedTopic(t, s), [][]byte{[]byte("x")})
			empty(t, ctx, s.ps.Topic("closed"))
			return err
		}, want: pubsub.ErrClosed, msg: `topic "closed"`},
		{name: "Dequeue after Close", run: func(t *testing.T, ctx context.Context, s store) error {
			if err := s.ps.Topic("closed").Enqueue(ctx, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			_, err := closedTopic(t, s).Dequeue(ctx)
			if st, _ := admin.TopicStats(ctx, s.ps.Topic("closed")); st.Ready != 1 {
				t.Errorf("after Dequeue on a closed handle the topic holds %+v, want the message ready", st)
			}
			return err
		}, want: pubsub.ErrClosed, msg: `topic "closed"`},
		{name: "Close while Dequeue waits", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("closed")
			time.AfterFunc(100*time.Millisecond, func() { _ = tp.Close() })
			_, err := tp.Dequeue(ctx)
			return err
		}, want: pubsub.ErrClosed, msg: `topic "closed"`},
		{name: "Close twice", run: func(t *testing.T, ctx context.Context, s store) error {
			return closedTopic(t, s).Close()
		}, want: pubsub.ErrClosed, msg: `topic "closed"`},
		{name: "Dequeue with an ended ctx while a message is ready", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("m")
			if err := tp.Enqueue(ctx, []byte("kept")); err != nil {
				t.Fatal(err)
			}
			dctx, dcancel := context.WithCancel(ctx)
			dcancel()
			_, err := tp.Dequeue(dctx)
			if err := roundTripNext(ctx, tp, "kept"); err != nil {
				t.Error(err)
			}
			return err
		}, want: context.Canceled, msg: "canceled"},
		{name: "PubSub closed twice", run: func(t *testing.T, ctx context.Context, s store) error {
			c := s.ps.(io.Closer)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.ps.Topic("m").Enqueue(ctx, []byte("x")); !errors.Is(err, pubsub.ErrClosed) {
				t.Errorf("Enqueue after the PubSub closed: %v, want ErrClosed", err)
			}
			return c.Close()
		}, want: pubsub.ErrClosed, msg: "closed"},
		// Events.
		{name: "event invalid JSON", run: decodeAndServe([]byte(`{"specversion":"1.0",`)),
			want: event.ErrMalformed, msg: "not a JSON CloudEvent"},
		{name: "event valid JSON of another kind", run: decodeAndServe([]byte(`{"order":42,"items":[1,2]}`)),
			want: event.ErrMalformed, msg: "specversion"},
		{name: "event missing type", run: decodeAndServe(envelope(`,"data":{"n":1}`)),
			want: event.ErrMalformed, msg: "empty event type"},
		{name: "event unknown type", run: func(t *testing.T, ctx context.Context, s store) error {
			d := serveRaw(t, ctx, s, "events", envelope(`,"type":"com.example.nobody","data":{}`))
			return errorFromDead(d, event.ErrUnknownType)
		}, want: event.ErrUnknownType, msg: "com.example.nobody"},
		{name: "event data of the wrong shape", run: func(t *testing.T, ctx context.Context, s store) error {
			d := serveRaw(t, ctx, s, "events", envelope(`,"type":"dev.conveyor.reliability.job","data":{"n":"one"}`))
			return errorFromDead(d, event.ErrMalformed)
		}, want: event.ErrMalformed, msg: "does not decode into"},
		{name: "event huge data", run: func(t *testing.T, ctx context.Context, s store) error {
			tp := s.ps.Topic("events")
			err := event.NewDispatcher(tp, event.DispatcherOptions{}).Dispatch(ctx, blob{S: strings.Repeat("x", badLimit)})
			empty(t, ctx, tp)
			return err
		}, want: pubsub.ErrTooLarge, msg: "the limit is 1024"},
	}
}

// errorFromDead turns a dead letter's reason back into an error, when it
// says it is sentinel's (the reason is kept as text).
func errorFromDead(d admin.DeadMessage, sentinel error) error {
	if !strings.Contains(d.LastError, sentinel.Error()) {
		return fmt.Errorf("dead with reason %q", d.LastError)
	}
	return fmt.Errorf("dead letter: %s: %w", d.LastError, sentinel)
}

// Types for the di cases.
type (
	unexportedTagged struct {
		orders pubsub.Topic `inject:"orders"` //nolint:unused // the bad input
	}
	namesNothing struct {
		Orders pubsub.Topic `inject:"nobody-registered-this"`
	}
	wantsWriter struct {
		W io.Writer `inject:""`
	}
	malformedTag struct {
		A *bytes.Buffer `inject:"a,sometimes"`
	}
	cycleA struct{}
	cycleB struct{}
	needsA struct {
		A *cycleA `inject:""`
	}
)

func plainCases() []plainCase {
	withDI := func(f func(ctx context.Context) error) func(*testing.T, context.Context) error {
		return func(t *testing.T, ctx context.Context) error {
			ctx = di.NewContext(ctx)
			defer func() { _ = di.Shutdown(ctx) }()
			return f(ctx)
		}
	}
	notMigrated := func(f func(ctx context.Context, tp pubsub.Topic) error) func(*testing.T, context.Context) error {
		return func(t *testing.T, ctx context.Context) error {
			_, db := pgtest.NewSchema(t) // never migrated
			ps := newPubSub(t, db, dbpubsub.Options{Logger: discard})
			return f(ctx, ps.Topic("orders"))
		}
	}
	return []plainCase{
		{name: "di/Fill with a non-pointer", run: withDI(func(ctx context.Context) error {
			return di.Fill(ctx, namesNothing{})
		}), want: di.ErrInvalidTarget, msg: "needs a pointer to a struct"},
		{name: "di/Fill with nil", run: withDI(func(ctx context.Context) error {
			return di.Fill(ctx, nil)
		}), want: di.ErrInvalidTarget, msg: "got nil"},
		{name: "di/Fill with a nil pointer", run: withDI(func(ctx context.Context) error {
			var p *namesNothing
			return di.Fill(ctx, p)
		}), want: di.ErrInvalidTarget, msg: "nil"},
		{name: "di/unexported tagged field", run: withDI(func(ctx context.Context) error {
			return di.Fill(ctx, &unexportedTagged{})
		}), want: di.ErrInvalidTarget, msg: "unexportedTagged.orders: unexported field"},
		{name: "di/tag naming nothing", run: withDI(func(ctx context.Context) error {
			var v namesNothing
			return di.Fill(ctx, &v)
		}), want: di.ErrNotFound, msg: "namesNothing.Orders"},
		{name: "di/type mismatch", run: withDI(func(ctx context.Context) error {
			if err := di.RegisterSingleton(ctx, &bytes.Buffer{}); err != nil { // a *bytes.Buffer, not an io.Writer
				return err
			}
			var v wantsWriter
			return di.Fill(ctx, &v)
		}), want: di.ErrNotFound, msg: "io.Writer"},
		{name: "di/malformed tag", run: withDI(func(ctx context.Context) error {
			return di.Fill(ctx, &malformedTag{})
		}), want: di.ErrInvalidTarget, msg: `unknown option "sometimes"`},
		{name: "di/cycle", run: withDI(func(ctx context.Context) error {
			_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*cycleA, error) {
				_, err := di.Resolve[*cycleB](ctx)
				return &cycleA{}, err
			})
			_ = di.RegisterLazySingleton(ctx, func(ctx context.Context) (*cycleB, error) {
				_, err := di.Resolve[*cycleA](ctx)
				return &cycleB{}, err
			})
			var v needsA
			return di.Fill(ctx, &v)
		}), want: di.ErrCycle, msg: "cycleA"},
		{name: "di/no injector", run: func(t *testing.T, ctx context.Context) error {
			var v namesNothing
			return di.Fill(ctx, &v)
		}, want: di.ErrNoInjector, msg: "di.Fill"},
		{name: "migrations/Enqueue on a never-migrated database", run: notMigrated(func(ctx context.Context, tp pubsub.Topic) error {
			return tp.Enqueue(ctx, []byte("x"))
		}), want: migrations.ErrNotMigrated, msg: "migrations.Migrate"},
		{name: "migrations/Dequeue on a never-migrated database", run: notMigrated(func(ctx context.Context, tp pubsub.Topic) error {
			_, err := tp.Dequeue(ctx)
			return err
		}), want: migrations.ErrNotMigrated, msg: "is missing"},
		{name: "migrations/migrated while the PubSub runs", run: func(t *testing.T, ctx context.Context) error {
			// The refusal is not remembered: once migrated, the same topic works.
			_, db := pgtest.NewSchema(t)
			ps := newPubSub(t, db, dbpubsub.Options{Logger: discard, PollInterval: 50 * time.Millisecond})
			tp := ps.Topic("orders")
			first := tp.Enqueue(ctx, []byte("refused"))
			if !errors.Is(first, migrations.ErrNotMigrated) {
				t.Errorf("Enqueue before migrating: %v, want ErrNotMigrated", first)
			}
			if err := migrations.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			if err := roundTrip(t, ctx, tp, []byte("accepted")); err != nil {
				t.Errorf("after migrating: %v", err)
			}
			return first
		}, want: migrations.ErrNotMigrated, msg: "is missing"},
		{name: "migrations/Verify of a never-migrated database", run: func(t *testing.T, ctx context.Context) error {
			_, db := pgtest.NewSchema(t)
			return migrations.Verify(ctx, db)
		}, want: migrations.ErrNotMigrated, msg: "is missing"},
		{name: "migrations/concurrent migration from two processes", run: func(t *testing.T, ctx context.Context) error {
			dsn, db := pgtest.NewSchema(t)
			var out syncbuf.Buffer
			a := startChild(t, "migrate", &out, migrateDSNEnv+"="+dsn)
			b := startChild(t, "migrate", &out, migrateDSNEnv+"="+dsn)
			errA, errB := a.Wait(), b.Wait()
			if errA != nil || errB != nil {
				t.Errorf("migrating processes: %v, %v; output:\n%s", errA, errB, out.Tail(4000))
			}
			return migrations.Verify(ctx, db)
		}},
	}
}
