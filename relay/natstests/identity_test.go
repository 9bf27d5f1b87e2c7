package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

// TestRelayedTwiceIsClaimedOnce relays each message of a dbpubsub outbox
// to a second dbpubsub topic, and from there twice into one destination,
// by two relays with different sources (the first loses its Acks, so the
// second gets every message again): every copy carries the identity of
// the message first enqueued (pubsub.HeaderMessageID), so a consumer's
// inbox (pubsub.ClaimMessage) claims each message once. A plain message,
// enqueued on the destination, is claimed by its ID.
func TestRelayedTwiceIsClaimedOnce(t *testing.T) {
	t.Parallel()
	for name, newDest := range destinations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, db := dbpubsubtest.NewStore(t)
			lease := time.Second
			ps := dbpubsubtest.New(t, db, dbpubsub.Options{Lease: lease, RescueInterval: lease / 5, Logger: quiet})
			outbox, src := ps.Topic("outbox"), ps.Topic("mid")
			ctx := context.Background()
			const n = 5
			for i := range n {
				if err := outbox.Enqueue(ctx, fmt.Appendf(nil, "m-%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			ids := make(chan string, n)
			r0, err := relay.New(&source{Topic: outbox, ids: ids}, src, relay.Options{Source: "zero", Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			runRelay(t, r0)
			original := map[string]bool{}
			for range n {
				original[<-ids] = true
			}
			dst := newDest(t)

			// The first relay publishes every message and loses its Ack.
			lossy := &source{Topic: src, loseAck: func(pubsub.Message) bool { return true }}
			r1, err := relay.New(lossy, dst, relay.Options{Source: "one", Workers: 1, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			rctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- r1.Run(rctx) }()
			waitFor(t, "the first relay's publishes", func() bool { return r1.Stats().Relayed >= n })
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// The second, under another source, gets them again after
			// their lease: the destination adds a second copy of each.
			r2, err := relay.New(src, dst, relay.Options{Source: "two", Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			runRelay(t, r2)
			waitFor(t, "the second relay's publishes", func() bool { return r2.Stats().Relayed >= n })

			final := dst
			if err := final.Enqueue(ctx, []byte("plain")); err != nil {
				t.Fatal(err)
			}
			firsts := map[string]int{}
			for range 2*n + 1 {
				dctx, cancel := context.WithTimeout(ctx, patience)
				m, err := final.Dequeue(dctx)
				cancel()
				if err != nil {
					t.Fatalf("Dequeue from the destination: %v", err)
				}
				first, _, err := pubsub.ClaimMessage(ctx, final, m)
				if err != nil {
					t.Fatalf("ClaimMessage: %v", err)
				}
				if first {
					firsts[string(m.Data())]++
				}
				if id := pubsub.Identity(m); string(m.Data()) != "plain" && !original[id] {
					t.Errorf("a copy of %s has identity %q, not the ID of a message of the outbox", m.Data(), id)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
				// A second claim of a plain message is not its first.
				if string(m.Data()) == "plain" {
					if again, _, err := pubsub.ClaimMessage(ctx, final, m); err != nil || again {
						t.Errorf("a second ClaimMessage of a plain message = %v, %v; want false", again, err)
					}
				}
			}
			for i := range n {
				if d := fmt.Sprintf("m-%d", i); firsts[d] != 1 {
					t.Errorf("message %s claimed first %d times, want once", d, firsts[d])
				}
			}
			if firsts["plain"] != 1 {
				t.Errorf("the plain message claimed first %d times, want once", firsts["plain"])
			}
		})
	}
}
