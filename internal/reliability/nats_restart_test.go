package reliability

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

const (
	natsRestartProducers = 2
	natsRestartPerProd   = 800
	natsRestartConsumers = 4
	natsRestartTopic     = "nats-restart"
	natsRestarts         = 2
	// natsCallTimeout is the ctx deadline of every Enqueue, Dequeue and Ack.
	natsCallTimeout = 3 * time.Second
	// natsCallGrace is how long after its ctx ended a call may take to
	// return before it counts as hung: a second deadline, not a duration
	// asserted.
	natsCallGrace = 5 * time.Second
)

// bounded runs call with a ctx ending after natsCallTimeout and reports
// whether it returned by the end of a second deadline natsCallGrace later;
// a call that did not is left running and its description is returned.
func bounded(parent context.Context, what string, call func(ctx context.Context) error) (hung string, err error) {
	ctx, cancel := context.WithTimeout(parent, natsCallTimeout)
	defer cancel()
	watchdog, wcancel := context.WithTimeout(context.WithoutCancel(parent), natsCallTimeout+natsCallGrace)
	defer wcancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return "", err
	case <-watchdog.Done():
		return fmt.Sprintf("%s did not return within %v after its ctx ended", what, natsCallGrace), context.DeadlineExceeded
	}
}

// Fault 3 on NATS. On a server the test owns, nats-server is stopped and
// started again on the same store, twice, while producers enqueue and
// consumers drain. Every call has a ctx deadline and returns by then; what
// failed is retried, as an application would. Nothing Enqueue returned nil
// for is lost, and the client reconnects by itself.
//
// The first stop is a SIGTERM, the second lame duck mode, as NATS has
// operators restart a server. Stopped by SIGTERM while a consumer acks,
// nats-server (2.9.10, and 2.15.3 embedded) acknowledges publishes to a
// stream with interest retention that it then drops, never delivered;
// conveyor's topics have limits retention for that reason
// (docs/natspubsub.md), and this test lost messages when they had not.
func TestNatsServerRestart(t *testing.T) {
	srv := startNatsServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ps := natsConnect(t, srv.URL, natspubsub.Options{Prefix: "restart", Lease: 2 * time.Second})
	tp := ps.Topic(natsRestartTopic)

	var hungMu sync.Mutex
	var hung []string
	call := func(what string, f func(ctx context.Context) error) error {
		h, err := bounded(ctx, what, f)
		if h != "" {
			hungMu.Lock()
			hung = append(hung, h)
			hungMu.Unlock()
		}
		return err
	}
	var errMu sync.Mutex
	var sentinelErrs []error
	noteErr := func(err error) {
		for _, s := range []error{pubsub.ErrClosed, pubsub.ErrInvalidTopic, pubsub.ErrTooLarge, pubsub.ErrNoSubscription, pubsub.ErrSettled} {
			if errors.Is(err, s) {
				errMu.Lock()
				sentinelErrs = append(sentinelErrs, err)
				errMu.Unlock()
			}
		}
	}

	cnt := newCounter()
	var deqErrs, ackErrs atomic.Int64
	cctx, stopConsumers := context.WithCancel(ctx)
	var cwg sync.WaitGroup
	for range natsRestartConsumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for cctx.Err() == nil {
				var m pubsub.Message
				err := call("Dequeue", func(ctx context.Context) error {
					var err error
					m, err = tp.Dequeue(ctx)
					return err
				})
				if err != nil {
					if cctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						deqErrs.Add(1)
						noteErr(err)
					}
					continue
				}
				cnt.deliver(m)
				for {
					err := call("Ack", m.Ack)
					if err == nil {
						cnt.ack(m)
						break
					}
					ackErrs.Add(1)
					if errors.Is(err, pubsub.ErrLeaseExpired) || cctx.Err() != nil {
						break // the message comes back to someone
					}
					noteErr(err)
				}
			}
		}()
	}

	var enqueued, prodErrs atomic.Int64
	var firstErr error // guarded by errMu
	var pwg sync.WaitGroup
	var all [][]byte
	var allMu sync.Mutex
	for p := range natsRestartProducers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for i := range natsRestartPerProd {
				data := fmt.Appendf(nil, "r-%d-%d", p, i)
				for ctx.Err() == nil {
					err := call("Enqueue", func(ctx context.Context) error { return tp.Enqueue(ctx, data) })
					if err == nil {
						break
					}
					prodErrs.Add(1)
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					noteErr(err)
					time.Sleep(50 * time.Millisecond) // then retry, as a producer would
				}
				if ctx.Err() != nil {
					return
				}
				allMu.Lock()
				all = append(all, data)
				allMu.Unlock()
				enqueued.Add(1)
				if i%4 == 0 {
					time.Sleep(time.Millisecond) // spread the enqueues over the restarts
				}
			}
		}()
	}

	// Restart when each further share of the messages is enqueued and
	// consumption is under way.
	total := natsRestartProducers * natsRestartPerProd
	for r := 1; r <= natsRestarts; r++ {
		for enqueued.Load() < int64(r*total/(natsRestarts+1)) || cnt.ackedCount() == 0 {
			if ctx.Err() != nil {
				t.Fatalf("producers and consumers did not get going before restart %d", r)
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop := srv.stop // SIGTERM: the server stops at once
		if r%2 == 0 {
			stop = srv.stopLameDuck
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // down for a while: calls meet no server
		if err := srv.start(); err != nil {
			t.Fatal(err)
		}
	}
	pwg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("producers did not finish: %d of %d enqueued; first error %v", enqueued.Load(), total, firstErr)
	}
	// Drained: every payload delivered, and the server holds nothing.
	// (An Ack that ended with its ctx may still have reached the server:
	// the message is then not delivered again.)
	undelivered := func() int {
		cnt.mu.Lock()
		defer cnt.mu.Unlock()
		n := 0
		for _, d := range all {
			if cnt.delivered[string(d)] == 0 {
				n++
			}
		}
		return n
	}
	var st admin.Stats
	for ctx.Err() == nil {
		var err error
		if st, err = admin.TopicStats(ctx, tp); err == nil && st == (admin.Stats{}) && undelivered() == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopConsumers()
	cwg.Wait()
	if ctx.Err() != nil {
		cnt.mu.Lock()
		var never []string
		for _, d := range all {
			if cnt.delivered[string(d)] == 0 {
				never = append(never, string(d))
			}
		}
		cnt.mu.Unlock()
		t.Errorf("the drain did not finish after the restarts: %d of %d never delivered (%v), the topic holds %+v; on the server:\n%s",
			len(never), total, never, st, natsState(srv.URL, "restart"))
	}

	for _, h := range hung {
		t.Error(h)
	}
	for _, err := range sentinelErrs {
		t.Errorf("a call got %v during the restarts: it must be a retryable error, not a sentinel of the caller's mistake", err)
	}
	cnt.mu.Lock()
	acked, doubt := 0, 0
	for _, d := range all {
		switch {
		case cnt.acked[string(d)] > 0:
			acked++
		case cnt.delivered[string(d)] > 0 && st == (admin.Stats{}):
			doubt++ // its Ack failed, yet the server holds it no more: it took the Ack
			acked++
		}
	}
	cnt.mu.Unlock()
	_, redeliveries, ackedTwice := cnt.tally()
	result{
		fault: "NATS server restarts (SIGTERM, then lame duck mode; start on the same store)", messages: len(all), acked: acked,
		duplicates: redeliveries,
		note: fmt.Sprintf("%d restarts; every call with a %v deadline, %d hung; producers got %d errors and retried (first: %v); %d Dequeue and %d Ack errors, %d messages whose Ack failed yet reached the server; %d payloads acked twice (a retried enqueue that had been stored, or an unfenced late Ack)",
			natsRestarts, natsCallTimeout, len(hung), prodErrs.Load(), firstErr, deqErrs.Load(), ackErrs.Load(), doubt, ackedTwice),
	}.report(t)
}
