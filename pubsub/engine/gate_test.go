package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// lateStore is a store whose first Receive hands over a delivery after
// its stop was closed, as a store does that took a message in the instant
// the quiesce gate shut; its later Receive calls hand over one at once.
// It tells what it was asked on its channels.
type lateStore struct {
	waiting  chan struct{} // a Receive waits
	given    chan string   // "retry" or "release": how the delivery came back
	received int           // Receive calls so far (one Dequeue at a time)
	release  bool          // it is a driver.Releaser
	closed   chan struct{}
}

type lateRef string

func (r lateRef) ID() string { return string(r) }

func (s *lateStore) Open(driver.Env) (driver.Features, error) { return 0, nil }
func (s *lateStore) Topic(string) driver.Topic                { return s }
func (s *lateStore) Close() error                             { close(s.closed); return nil }
func (s *lateStore) Publish(context.Context, <-chan struct{}, driver.Outgoing) (bool, error) {
	return true, nil
}

func (s *lateStore) Subscription(string) driver.Subscription {
	if s.release {
		return releasingSub{s}
	}
	return s
}

func (s *lateStore) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	s.received++
	if s.received == 1 {
		s.waiting <- struct{}{}
		select {
		case <-stop:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	*d = driver.Delivery{Msg: lateRef("m"), Token: uint64(s.received), Data: []byte("m"), Attempt: s.received}
	return nil
}

func (s *lateStore) Ack(context.Context, *driver.Delivery) error { return nil }
func (s *lateStore) Retry(_ context.Context, _ *driver.Delivery, delay time.Duration, _ string) error {
	if delay == 0 {
		s.given <- "retry"
	}
	return nil
}
func (s *lateStore) Dead(context.Context, *driver.Delivery, string) error          { return nil }
func (s *lateStore) Extend(context.Context, *driver.Delivery, time.Duration) error { return nil }

// releasingSub is lateStore's subscription with driver.Releaser.
type releasingSub struct{ *lateStore }

func (s releasingSub) Release(context.Context, *driver.Delivery) error {
	s.given <- "release"
	return nil
}

// TestGateGivesBackALateDelivery: a delivery the store hands over after
// the gate shut is never handed out: it goes back to the store, uncounted
// where the store can (driver.Releaser), else with Retry due now; the
// Dequeue waits for Resume.
func TestGateGivesBackALateDelivery(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool
		want    string
	}{
		{"Releaser", true, "release"},
		{"Retry", false, "retry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const patience = 15 * time.Second
			store := &lateStore{waiting: make(chan struct{}, 1), given: make(chan string, 1), release: tc.release, closed: make(chan struct{})}
			ps, err := engine.New(store, engine.Options{Name: "late"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			tp := ps.Topic("t")
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			got := make(chan pubsub.Message, 1)
			go func() {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					t.Errorf("Dequeue: %v", err)
				}
				got <- m
			}()
			<-store.waiting
			if err := admin.Quiesce(ctx, ps); err != nil {
				t.Fatalf("Quiesce: %v", err)
			}
			select {
			case how := <-store.given:
				if how != tc.want {
					t.Fatalf("the late delivery came back by %s, want %s", how, tc.want)
				}
			case <-time.After(patience):
				t.Fatal("the late delivery was not given back")
			}
			select {
			case m := <-got:
				t.Fatalf("Dequeue returned %v while quiesced", m)
			case <-time.After(100 * time.Millisecond):
			}
			if err := admin.ResumeConsumers(ctx, ps); err != nil {
				t.Fatal(err)
			}
			m := <-got
			if m == nil {
				t.FailNow()
			}
			if a := pubsub.Attempt(m); a != 2 {
				t.Fatalf("after Resume Dequeue got attempt %d, want the second Receive's", a)
			}
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
