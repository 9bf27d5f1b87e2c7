package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// job is the event of the shutdown test.
type job struct {
	N int `json:"n"`
}

func (job) Type() event.EventType { return "dev.conveyor.reliability.job" }

// keepOpen hides a PubSub's Close from an injector, so that the PubSub
// outlives the app (the "process") that used it.
type keepOpen struct{ pubsub.PubSub }

const shutdownEvents = 1000

// Fault 6 (and 7 on the channel backend). An event.Service whose 1,000
// workers each hold one of 1,000 events is stopped by canceling Run's ctx;
// the events that do not finish within the drain are failed, none is lost,
// and a new Service (the restarted app) handles all of them.
func TestShutdownUnderLoad(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s := b.new(t, config{Capacity: 2 * shutdownEvents,
			Retry: pubsub.RetryPolicy{MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}})
		events := make([]event.Event, shutdownEvents)
		for i := range events {
			events[i] = job{N: i}
		}
		if err := event.NewDispatcher(s.ps.Topic("jobs"), event.DispatcherOptions{}).DispatchBatch(ctx, events...); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		done := map[int]int{}      // successful handlings per event
		delivered := map[int]int{} // handlings begun per event
		var inFlight, interrupted atomic.Int64

		// app runs a Service on the store until stop; slow handlers take
		// 1 to 4 s, honouring their ctx.
		app := func(workers int, slow bool, stop <-chan struct{}) (runErr error) {
			actx := di.NewContext(ctx)
			defer func() {
				if err := di.Shutdown(actx); err != nil {
					t.Errorf("di.Shutdown: %v", err)
				}
			}()
			for _, err := range []error{
				di.RegisterSingleton[pubsub.PubSub](actx, keepOpen{s.ps}),
				pubsub.RegisterTopic(actx),
				event.Register(actx),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			svc, err := event.NewService("jobs", event.ServiceOptions{
				Workers: workers, DrainTimeout: 1500 * time.Millisecond, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			err = event.ListenFunc(svc, func(hctx context.Context, e job) error {
				inFlight.Add(1)
				defer inFlight.Add(-1)
				mu.Lock()
				delivered[e.N]++
				mu.Unlock()
				if slow {
					select {
					case <-time.After(time.Duration(1000+rand.IntN(3000)) * time.Millisecond):
					case <-hctx.Done():
						interrupted.Add(1)
						return hctx.Err()
					}
				}
				mu.Lock()
				done[e.N]++
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithCancel(actx)
			go func() {
				<-stop
				rcancel()
			}()
			return svc.Run(rctx)
		}

		// The first app: stopped once its 1,000 workers all hold an event.
		stop := make(chan struct{})
		var atStop int64
		go func() {
			// All 1,000 in flight, or else all delivered once (a slow
			// machine may finish the first ones before the last start).
			for inFlight.Load() < shutdownEvents && ctx.Err() == nil {
				mu.Lock()
				all := len(delivered) == shutdownEvents
				mu.Unlock()
				if all {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			atStop = inFlight.Load()
			close(stop)
		}()
		if err := app(shutdownEvents, true, stop); err != nil {
			t.Fatalf("first Run: %v", err)
		}
		mu.Lock()
		doneFirst := len(done)
		mu.Unlock()

		// The restarted app handles the rest.
		stop2 := make(chan struct{})
		go func() {
			defer close(stop2)
			for ctx.Err() == nil {
				mu.Lock()
				n := len(done)
				mu.Unlock()
				if n == shutdownEvents {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		if err := app(50, false, stop2); err != nil {
			t.Fatalf("second Run: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("after the restart %d of %d events handled", len(done), shutdownEvents)
		}
		st, err := admin.TopicStats(ctx, s.ps.Topic("jobs"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready+st.Scheduled+st.Processing+st.Dead != 0 {
			t.Errorf("left in the topic after the restart: %+v, want nothing", st)
		}
		mu.Lock()
		defer mu.Unlock()
		dups, twice := 0, 0
		for _, n := range delivered {
			dups += n - 1
		}
		for _, n := range done {
			if n > 1 {
				twice++
			}
		}
		if twice != 0 {
			t.Errorf("%d events handled successfully twice", twice)
		}
		result{fault: "shutdown under load (" + b.name + ")", messages: shutdownEvents, acked: len(done), dead: int(st.Dead),
			duplicates: dups, note: fmt.Sprintf("Run canceled with %d events in flight; %d finished in the 1.5 s drain, %d interrupted and failed, handled after the restart",
				atStop, doneFirst, interrupted.Load())}.report(t)
	})
}

// A process that stops (dbpubsub.PubSub.Close) with deliveries in hand and
// rows prefetched: the prefetched rows are given back at once, the
// deliveries come back to the next process when their lease runs out, and
// the late settles of the closed process change nothing. 200 messages.
func TestCloseWithDeliveriesInHand(t *testing.T) {
	const (
		n     = 200
		held  = 20
		lease = time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, db := newStore(t)
	first := newPubSub(t, db, quietOptions(lease))
	tp := first.Topic("close")
	enqueueAll(t, tp, payloads("h", n))
	var inHand []pubsub.Message
	for range held {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inHand = append(inHand, m)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range inHand {
		if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrClosed) {
			t.Errorf("Ack after the PubSub closed: %v, want ErrClosed", err)
		}
	}
	var processing int
	if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events_all WHERE status = 'processing'").Scan(&processing); err != nil {
		t.Fatal(err)
	}
	if processing != held {
		t.Errorf("%d rows processing after Close, want the %d in hand (prefetched rows given back)", processing, held)
	}

	second := newPubSub(t, db, quietOptions(lease))
	cnt := newCounter()
	cctx, stop := context.WithCancel(ctx)
	wg := consumeUntil(cctx, second.Topic("close"), 4, func(m pubsub.Message) {
		cnt.deliver(m)
		if ackPersistently(cctx, m) {
			cnt.ack(m)
		}
	})
	err := waitSettled(ctx, db, "close", n)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	acked, dead, redeliveries, _ := dbCount(t, db, "close")
	if redeliveries != held {
		t.Errorf("%d redeliveries, want the %d deliveries in hand only", redeliveries, held)
	}
	result{fault: "close with deliveries in hand (dbpubsub)", messages: n, acked: acked, dead: dead, duplicates: redeliveries,
		note: fmt.Sprintf("%d deliveries in hand at Close came back after the %v lease", held, lease)}.report(t)
}
