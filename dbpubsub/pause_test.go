package dbpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A pause made in one process makes another give back the rows it claimed
// ahead for its consumers, at its listener's notification, rather than
// hand them out; on resume they come, in order. A process without LISTEN
// learns the pause at its next claim. (Here the rows would also be given
// back 50 ms after the last Dequeue call, as idle; the notification is what
// gives them back while consumers keep asking: with that grace at 5 s, the
// case fails without it.)
func TestPauseGivesBackPrefetchedRows(t *testing.T) {
	t.Parallel()
	for _, noListen := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoListen=%v", noListen), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn, db := newStore(t)
			one := newPubSub(t, db, dbpubsub.Options{})
			two := newPubSub(t, openDB(t, dsn), dbpubsub.Options{NoListen: noListen, PollInterval: 100 * time.Millisecond})
			pub, con := one.Topic("pf"), two.Topic("pf")
			const n = 20
			for i := range n {
				if err := pub.Enqueue(ctx, []byte(fmt.Sprintf("m%02d", i))); err != nil {
					t.Fatal(err)
				}
			}
			first := dequeueOne(t, con)
			if string(first.Data()) != "m00" {
				t.Fatalf("first message %q, want m00", first.Data())
			}
			if err := admin.Pause(ctx, pub); err != nil {
				t.Fatal(err)
			}
			if noListen {
				// Its buffer is used until a claim tells it: empty it.
				for {
					dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					m, err := con.Dequeue(dctx)
					cancel()
					if errors.Is(err, context.DeadlineExceeded) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if err := m.Ack(ctx); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				time.Sleep(200 * time.Millisecond) // the notification's way
				dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				m, err := con.Dequeue(dctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Dequeue in the other process while paused: %v, message %v; want none", err, m)
				}
				if p := countRows(t, db, "status = 'processing'"); p != 1 {
					t.Fatalf("%d rows processing while paused, want 1 (the one in hand): the others are given back", p)
				}
			}
			if err := first.Ack(ctx); err != nil {
				t.Fatalf("Ack of a delivery made before the pause: %v", err)
			}
			if err := admin.Resume(ctx, con); err != nil {
				t.Fatal(err)
			}
			left := n - 1
			if noListen {
				left = countRows(t, db, "status = 'pending'")
			}
			for i := n - left; i < n; i++ {
				m := dequeueOne(t, con)
				if want := fmt.Sprintf("m%02d", i); string(m.Data()) != want {
					t.Fatalf("after resume got %q, want %q", m.Data(), want)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// DeleteSubscription takes the subscription's pause with it: one created
// again under the name is not paused.
func TestPauseGoesWithItsSubscription(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{})
	sub, err := ps.Subscribe(ctx, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Pause(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := ps.DeleteSubscription(ctx, "t", "s"); err != nil {
		t.Fatal(err)
	}
	again, err := ps.Subscribe(ctx, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := admin.IsPaused(ctx, again); err != nil || p {
		t.Fatalf("IsPaused of a subscription made again after its deletion = %v, %v; want false, nil", p, err)
	}
}

func dequeueOne(t *testing.T, tp pubsub.Topic) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	return m
}
