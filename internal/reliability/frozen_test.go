package reliability

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/faultproxy"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Fault: the server stops answering (frozen, its port still open) while an
// Enqueue with no deadline of its own is in flight. Close returns once
// CloseTimeout has passed, and Shutdown(ctx) once ctx ends, though the
// statement timeout is far longer; the call in flight then fails with
// pubsub.ErrClosed. (The watchdog, a minute, only tells a hang from an
// answer: StatementTimeout is ten.)
func TestCloseOnFrozenServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  dbpubsub.Options
		close func(ps *dbpubsub.PubSub) error
	}{
		{"Close honours CloseTimeout", dbpubsub.Options{CloseTimeout: time.Second}, func(ps *dbpubsub.PubSub) error { return ps.Close() }},
		{"Shutdown honours its ctx", dbpubsub.Options{CloseTimeout: 10 * time.Minute}, func(ps *dbpubsub.PubSub) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return ps.Shutdown(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := newStore(t)
			px := faultproxy.Start(t, serverOf(t, dsn))
			opts := tc.opts
			opts.StatementTimeout = 10 * time.Minute
			opts.Logger = discard
			ps, err := dbpubsub.New(openDB(t, px.DSN(dsn)), opts)
			if err != nil {
				t.Fatal(err)
			}
			tp := ps.Topic("frozen")
			if err := tp.Enqueue(context.Background(), []byte("before")); err != nil {
				t.Fatal(err)
			}
			px.Freeze()
			inFlight := make(chan error, 1)
			go func() { inFlight <- tp.Enqueue(context.Background(), []byte("in flight")) }()
			time.Sleep(200 * time.Millisecond) // let it reach the server

			closed := make(chan error, 1)
			go func() { closed <- tc.close(ps) }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("close: %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("close on a frozen server did not return within a minute")
			}
			select {
			case err := <-inFlight:
				if !errors.Is(err, pubsub.ErrClosed) {
					t.Errorf("the Enqueue in flight: %v, want an error wrapping pubsub.ErrClosed", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the Enqueue in flight did not return within a minute of the close")
			}
		})
	}
}

// Fault: the server stops answering (frozen, its port still open) while
// consumers hold deliveries, and each settles its own with a ctx of a
// few seconds: Nack, Fail (the last attempt: dead), Reject, Ack with
// ConfirmAck and ExtendLease. Each returns its ctx's error when the ctx
// ends, though StatementTimeout is ten minutes: a statement the server
// never answered has an unknown outcome, and the call says so rather than
// await it. (The watchdog, a minute, only tells a hang from an answer.)
func TestSettleOnFrozenServer(t *testing.T) {
	dsn, _ := newStore(t)
	px := faultproxy.Start(t, serverOf(t, dsn))
	db := openDB(t, px.DSN(dsn))
	base := dbpubsub.Options{StatementTimeout: 10 * time.Minute, CloseTimeout: time.Second, Lease: 5 * time.Minute, Logger: discard}
	confirm := base
	confirm.ConfirmAck = true
	confirm.Retry = pubsub.RetryPolicy{MaxAttempts: 1}
	type call struct {
		name string
		ps   *dbpubsub.PubSub
		f    func(ctx context.Context, m pubsub.Message) error
	}
	plain, strict := newPubSub(t, db, base), newPubSub(t, db, confirm)
	calls := []call{
		{"Nack", plain, func(ctx context.Context, m pubsub.Message) error { return m.Nack(ctx) }},
		{"Fail", plain, func(ctx context.Context, m pubsub.Message) error {
			return pubsub.Fail(ctx, m, errors.New("frozen"))
		}},
		{"Reject", plain, func(ctx context.Context, m pubsub.Message) error {
			return pubsub.Reject(ctx, m, errors.New("frozen"))
		}},
		{"ExtendLease", plain, func(ctx context.Context, m pubsub.Message) error {
			return pubsub.ExtendLease(ctx, m, time.Minute)
		}},
		{"Ack with ConfirmAck", strict, func(ctx context.Context, m pubsub.Message) error { return m.Ack(ctx) }},
		{"Fail at the last attempt (dead)", strict, func(ctx context.Context, m pubsub.Message) error {
			return pubsub.Fail(ctx, m, errors.New("frozen"))
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	msgs := make([]pubsub.Message, len(calls))
	for i, c := range calls {
		tp := c.ps.Topic("frozen-settle-" + strconv.Itoa(i))
		if err := tp.Enqueue(ctx, []byte(c.name)); err != nil {
			t.Fatal(err)
		}
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = m
	}
	px.Freeze()
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.name
	}
	callFrozen(t, "settle calls", names, func(ctx context.Context, i int) error { return calls[i].f(ctx, msgs[i]) }, false)
}

// Fault: the server stops answering (frozen, its port still open) while
// producers enqueue with a ctx of a few seconds, on topics whose
// connection was just used: Enqueue, EnqueueAt, EnqueueBatch (grouped,
// and large enough for a statement of its own) and EnqueueUnique. Each
// returns when its ctx ends, though StatementTimeout is ten minutes, with
// ctx's error wrapping dbpubsub.ErrOutcomeUnknown: its statement was sent
// and never answered. (The watchdog, a minute, only tells a hang from an
// answer.)
func TestEnqueueOnFrozenServer(t *testing.T) {
	dsn, _ := newStore(t)
	px := faultproxy.Start(t, serverOf(t, dsn))
	db := openDB(t, px.DSN(dsn))
	ps := newPubSub(t, db, dbpubsub.Options{StatementTimeout: 10 * time.Minute, CloseTimeout: time.Second, Logger: discard})
	big := make([][]byte, 100)
	for i := range big {
		big[i] = []byte("big")
	}
	calls := []struct {
		name string
		f    func(ctx context.Context, tp pubsub.Topic) error
	}{
		{"Enqueue", func(ctx context.Context, tp pubsub.Topic) error { return tp.Enqueue(ctx, []byte("frozen")) }},
		{"EnqueueAt", func(ctx context.Context, tp pubsub.Topic) error {
			return pubsub.EnqueueAt(ctx, tp, []byte("frozen"), time.Now().Add(time.Hour))
		}},
		{"EnqueueBatch", func(ctx context.Context, tp pubsub.Topic) error {
			return pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("a"), []byte("b")})
		}},
		{"EnqueueBatch of 100", func(ctx context.Context, tp pubsub.Topic) error { return pubsub.EnqueueBatch(ctx, tp, big) }},
		{"EnqueueUnique", func(ctx context.Context, tp pubsub.Topic) error {
			_, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("frozen"))
			return err
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	topics := make([]pubsub.Topic, len(calls))
	for i := range calls {
		topics[i] = ps.Topic("frozen-enqueue-" + strconv.Itoa(i))
		if err := topics[i].Enqueue(ctx, []byte("warm-up")); err != nil { // the route is known
			t.Fatal(err)
		}
	}
	// Each call runs at once on a pooled connection, just used: none has
	// to dial the frozen server or check a connection on it (a call
	// stopped there is not sent, and returns ctx's error alone). pgx's
	// database/sql driver pings a connection before it lends it again
	// when its last such check is more than a second old, and a new
	// connection has had none: the connections are lent twice, so that
	// the calls' lending needs no ping.
	db.DB.SetMaxOpenConns(2 * len(calls))
	db.DB.SetMaxIdleConns(2 * len(calls))
	for range 2 {
		var conns []*sql.Conn
		for range len(calls) + 2 {
			conn, err := db.DB.Conn(ctx)
			if err == nil {
				err = conn.PingContext(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
		}
		for _, conn := range conns {
			conn.Close()
		}
	}
	px.Freeze()
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.name
	}
	callFrozen(t, "enqueues", names, func(ctx context.Context, i int) error { return calls[i].f(ctx, topics[i]) }, true)
}

// callFrozen makes each call (named by names) at once, each with a 2 s
// ctx, on a server that stopped answering: every one must return its
// ctx's error (context.DeadlineExceeded), wrapping
// dbpubsub.ErrOutcomeUnknown too when inDoubt; a call still running after
// a minute (StatementTimeout is ten) fails the test.
func callFrozen(t *testing.T, what string, names []string, call func(context.Context, int) error, inDoubt bool) {
	t.Helper()
	errs := make(chan error, len(names))
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	for i, name := range names {
		go func() {
			defer func() {
				mu.Lock()
				delete(pending, name)
				mu.Unlock()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := call(ctx, i)
			switch {
			case !errors.Is(err, context.DeadlineExceeded):
				err = fmt.Errorf("%s on a frozen server: %v, want its ctx's error (context.DeadlineExceeded)", name, err)
			case inDoubt && !errors.Is(err, dbpubsub.ErrOutcomeUnknown):
				err = fmt.Errorf("%s on a frozen server: %v, want it to wrap dbpubsub.ErrOutcomeUnknown too", name, err)
			default:
				err = nil
			}
			errs <- err
		}()
	}
	watchdog := time.After(time.Minute)
	for range names {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-watchdog:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s on a frozen server did not return within a minute (StatementTimeout is ten): %v", what, pending)
		}
	}
}
