package relay_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

// TestLostAckIsASecondCopy relays to kafkapubsub, which cannot enqueue
// under a key, from a source whose first Ack of each message is lost: the
// source hands each out again after its lease and the relay publishes it
// again, so the topic holds two copies of each, both with the identity
// of the message in the source (its ID there). Stats counts both as
// relayed; the consumer's inbox claims each identity once.
func TestLostAckIsASecondCopy(t *testing.T) {
	t.Parallel()
	_, db := dbpubsubtest.NewStore(t)
	lease := time.Second
	ps := dbpubsubtest.New(t, db, dbpubsub.Options{Lease: lease, RescueInterval: lease / 5, Logger: quiet})
	outbox, inbox := ps.Topic("outbox"), ps.Topic("inbox")
	brokers := kafkapubsubtest.Brokers(t)
	dst, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dst.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	const n = 3
	for i := range n {
		if err := outbox.Enqueue(ctx, fmt.Appendf(nil, "m-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ids := make(chan string, 2*n)
	src := &losing{Topic: outbox, ids: ids}
	r, err := relay.New(src, dst.Topic("orders"), relay.Options{Workers: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unique() {
		t.Fatal("Unique() = true for a kafkapubsub destination")
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.Run(rctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	byID := map[string][]string{} // identity -> payloads of its copies
	firsts := 0
	for range 2 * n {
		m, err := dst.Topic("orders").Dequeue(ctx)
		if err != nil {
			stop()
			wg.Wait()
			t.Fatalf("after %d copies: Dequeue: %v", len(byID), err)
		}
		id := pubsub.Identity(m)
		byID[id] = append(byID[id], string(m.Data()))
		first, _, err := pubsub.Claim(ctx, inbox, id)
		if err != nil {
			t.Fatal(err)
		}
		if first {
			firsts++
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	handed := map[string]bool{}
	for len(ids) > 0 {
		handed[<-ids] = true
	}
	for id, payloads := range byID {
		if len(payloads) != 2 || payloads[0] != payloads[1] || !handed[id] {
			t.Errorf("identity %q: copies %q; want two of one message, the identity its ID in the source (handed out: %v)", id, payloads, handed)
		}
	}
	if len(byID) != n || firsts != n {
		t.Errorf("%d identities, %d first claims; want %d of each", len(byID), firsts, n)
	}
	if s := r.Stats(); s.Relayed != 2*n || s.Duplicates != 0 || src.lost.Load() != n {
		t.Errorf("Stats = %+v, %d Acks lost; want %d relayed, no duplicates, %d lost", s, src.lost.Load(), 2*n, n)
	}
}

// losing is a source that loses the first Ack of each message (the
// message stays in hand until its lease runs out), and sends the ID of
// each message it hands out on ids, while there is room.
type losing struct {
	pubsub.Topic
	ids  chan string
	lost atomic.Int64
}

func (s *losing) Unwrap() pubsub.Topic { return s.Topic }

func (s *losing) Dequeue(ctx context.Context) (pubsub.Message, error) {
	m, err := s.Topic.Dequeue(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case s.ids <- m.ID():
	default:
	}
	return &losingDelivery{Message: m, s: s}, nil
}

type losingDelivery struct {
	pubsub.Message
	s *losing
}

func (d *losingDelivery) Unwrap() pubsub.Message { return d.Message }

func (d *losingDelivery) Ack(ctx context.Context) error {
	if pubsub.Attempt(d.Message) == 1 {
		d.s.lost.Add(1)
		return nil
	}
	return d.Message.Ack(ctx)
}
