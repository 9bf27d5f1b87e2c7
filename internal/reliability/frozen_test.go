package reliability

import (
	"context"
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
	errs := make(chan error, len(calls))
	var mu sync.Mutex
	pending := map[string]bool{}
	for _, c := range calls {
		pending[c.name] = true
	}
	for i, c := range calls {
		go func() {
			defer func() {
				mu.Lock()
				delete(pending, c.name)
				mu.Unlock()
			}()
			cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer ccancel()
			err := c.f(cctx, msgs[i])
			if !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%s on a frozen server: %v, want its ctx's error (context.DeadlineExceeded)", c.name, err)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	watchdog := time.After(time.Minute)
	for range calls {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-watchdog:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("settle calls on a frozen server did not return within a minute (StatementTimeout is ten): %v", pending)
		}
	}
}
