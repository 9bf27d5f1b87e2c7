package event_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
)

// attempts counts the calls of a listener by event ID.
type attempts struct{ c counter }

func (a *attempts) next(e OrderPlaced) int { return a.c.add(strconv.Itoa(e.ID)) }

// TestInboxSiblingFails runs a Service with two listeners of one event
// type: A writes its effect guarded by event.Claim and succeeds; B fails
// on the first delivery and succeeds on the second. Each event is handled
// twice, and A's effect happens once.
func TestInboxSiblingFails(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		effects := b.newLedger(t, ctx)
		var callsA, callsB attempts
		var mu sync.Mutex
		var firsts []bool // A's claims, in order
		svc, logs := newService(t, "orders", event.ServiceOptions{Workers: 2, Subscription: "billing"})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error { // A
			callsA.next(e)
			first, err := effects.record(ctx, strconv.Itoa(e.ID), false)
			mu.Lock()
			firsts = append(firsts, first)
			mu.Unlock()
			return err
		})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error { // B
			if callsB.next(e) == 1 {
				return errors.New("B fails the first time")
			}
			return nil
		})
		start(t, ctx, svc)
		const n = 5
		dispatchN(t, ctx, n)
		eventually(t, "B succeeded on every event", func() bool {
			for id := range n {
				if callsB.c.get(strconv.Itoa(id)) < 2 {
					return false
				}
			}
			return true
		})
		waitSettled(t, ctx, "orders", "billing")
		for id := range n {
			key := strconv.Itoa(id)
			if got := callsA.c.get(key); got != 2 {
				t.Errorf("event %d: A called %d times, want 2 (once per delivery)", id, got)
			}
			if got := effects.count(t, key); got != 1 {
				t.Errorf("event %d: A's effect happened %d times, want once", id, got)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		nFirst := 0
		for _, f := range firsts {
			if f {
				nFirst++
			}
		}
		if nFirst != n || len(firsts) != 2*n {
			t.Errorf("A's claims %v: want %d first of %d", firsts, n, 2*n)
		}
		if l := logs.String(); !strings.Contains(l, "B fails the first time") {
			t.Errorf("the failures were not logged:\n%s", l)
		}
	})
}

// TestInboxReleasedOnFailure has a listener claim and then fail on the
// first delivery: the claim is undone (released, or rolled back with the
// listener's transaction), so the redelivery claims first and makes the
// effect, once.
func TestInboxReleasedOnFailure(t *testing.T) {
	cases := []struct {
		name string
		// handle is the listener's first delivery, which fails after it
		// has set *first.
		handle func(ctx context.Context, l ledger, key string, first *bool) error
	}{
		{"ErrorAfterClaim", func(ctx context.Context, _ ledger, _ string, first *bool) (err error) {
			if *first, err = event.Claim(ctx, nil); err != nil {
				return err
			}
			return errors.New("failed after its claim")
		}},
		{"PanicAfterClaim", func(ctx context.Context, _ ledger, _ string, first *bool) (err error) {
			if *first, err = event.Claim(ctx, nil); err != nil {
				return err
			}
			panic("panicked after its claim")
		}},
		{"EffectFails", func(ctx context.Context, l ledger, key string, first *bool) (err error) {
			*first, err = l.record(ctx, key, true) // in the store's transaction, if it has them
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				ctx := newApp(t, b, fastRetry(5))
				effects := b.newLedger(t, ctx)
				var calls attempts
				var mu sync.Mutex
				var firsts []bool
				svc, _ := newService(t, "orders", event.ServiceOptions{})
				_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
					key := strconv.Itoa(e.ID)
					var (
						first bool
						err   error
					)
					defer func() {
						mu.Lock()
						firsts = append(firsts, first)
						mu.Unlock()
					}()
					if calls.next(e) == 1 {
						return c.handle(ctx, effects, key, &first)
					}
					first, err = effects.record(ctx, key, false)
					return err
				})
				start(t, ctx, svc)
				dispatchN(t, ctx, 1)
				eventually(t, "the redelivery", func() bool { return calls.c.get("0") >= 2 })
				waitSettled(t, ctx, "orders", pubsub.DefaultSubscription)
				mu.Lock()
				defer mu.Unlock()
				if len(firsts) != 2 || !firsts[0] || !firsts[1] {
					t.Errorf("claims %v, want [true true]: the failed delivery's claim was kept", firsts)
				}
				if got := effects.count(t, "0"); got != 1 {
					t.Errorf("the effect happened %d times, want once", got)
				}
			})
		})
	}
}

// TestInboxKeysPerListener has two listeners of one type with the same
// name (two funcs) and a failing third: each claims for itself, and
// neither repeats its effect on the redelivery.
func TestInboxKeysPerListener(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, fastRetry(5))
		effects := b.newLedger(t, ctx)
		var third attempts
		svc, _ := newService(t, "orders", event.ServiceOptions{})
		for _, name := range []string{"x", "y"} {
			_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
				_, err := effects.record(ctx, name, false)
				return err
			})
		}
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			if third.next(e) == 1 {
				return errors.New("fails the first time")
			}
			return nil
		})
		start(t, ctx, svc)
		dispatchN(t, ctx, 1)
		eventually(t, "the redelivery", func() bool { return third.c.get("0") >= 2 })
		waitSettled(t, ctx, "orders", pubsub.DefaultSubscription)
		for _, name := range []string{"x", "y"} {
			if got := effects.count(t, name); got != 1 {
				t.Errorf("listener %s made its effect %d times, want once", name, got)
			}
		}
	})
}

// TestInboxPerSubscription runs the same listener on two subscriptions:
// the claims of one do not stop the other's.
func TestInboxPerSubscription(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		effects := b.newLedger(t, ctx)
		for _, sub := range []string{"billing", "analytics"} {
			svc, _ := newService(t, "orders", event.ServiceOptions{Subscription: sub})
			_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
				_, err := effects.record(ctx, sub, false)
				return err
			})
			start(t, ctx, svc)
		}
		dispatchN(t, ctx, 1)
		for _, sub := range []string{"billing", "analytics"} {
			eventually(t, "the effect on "+sub, func() bool { return effects.count(t, sub) > 0 })
			waitSettled(t, ctx, "orders", sub)
			if got := effects.count(t, sub); got != 1 {
				t.Errorf("the listener on %s made its effect %d times, want once", sub, got)
			}
		}
	})
}

func TestClaimOutsideListener(t *testing.T) {
	t.Run("NotAListenersCtx", func(t *testing.T) {
		t.Parallel()
		if _, err := event.Claim(context.Background(), nil); !errors.Is(err, event.ErrOutsideListener) {
			t.Errorf("Claim: %v, want ErrOutsideListener", err)
		}
	})
	t.Run("AfterTheListenerReturned", func(t *testing.T) {
		eachBackend(t, func(t *testing.T, b backend) {
			ctx := newApp(t, b, backendOptions{})
			kept := make(chan context.Context, 1)
			svc, _ := newService(t, "orders", event.ServiceOptions{})
			_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
				kept <- ctx
				return nil
			})
			start(t, ctx, svc)
			dispatchN(t, ctx, 1)
			var lctx context.Context
			select {
			case lctx = <-kept:
			case <-time.After(patience):
				t.Fatal("not handled")
			}
			waitSettled(t, ctx, "orders", pubsub.DefaultSubscription)
			if _, err := event.Claim(lctx, nil); !errors.Is(err, event.ErrOutsideListener) {
				t.Errorf("Claim after the listener returned: %v, want ErrOutsideListener", err)
			}
		})
	})
}

// TestClaimInForeignTx claims in a transaction that the database backend
// cannot write in: refused, not recorded elsewhere without a word.
func TestClaimInForeignTx(t *testing.T) {
	eachDurableBackend(t, func(t *testing.T, b backend) {
		ctx := newApp(t, b, backendOptions{})
		errs := make(chan error, 1)
		svc, _ := newService(t, "orders", event.ServiceOptions{})
		_ = event.ListenFunc(svc, func(ctx context.Context, e OrderPlaced) error {
			_, err := event.Claim(ctx, struct{ fakeTx string }{"a transaction of another store"})
			select {
			case errs <- err:
			default:
			}
			return event.Permanent(fmt.Errorf("claimed: %w", err))
		})
		start(t, ctx, svc)
		dispatchN(t, ctx, 1)
		select {
		case err := <-errs:
			if !errors.Is(err, pubsub.ErrUnsupported) {
				t.Errorf("Claim in a foreign transaction on %s: %v, want pubsub.ErrUnsupported", b.name, err)
			}
		case <-time.After(patience):
			t.Fatal("not handled")
		}
	})
}
