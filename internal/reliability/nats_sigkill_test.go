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

// Fault 10 on NATS. Consumers reject every message (each goes dead with a
// confirmed ack) on a server the test owns, which is SIGKILLed while they
// do and started again on the same store. nats-server 2.9 writes a
// consumer's acks to disk a moment after it confirmed them, so the restart
// forgets some acks of dead messages and delivers them again; conveyor
// reads the message's record and keeps them from any handler. Counted: no
// message whose Reject returned nil before the kill is delivered after the
// restart, and every message ends dead.
func TestNatsKilledServerNeverDeliversTheDead(t *testing.T) {
	const n, killAfter, workers = 3000, 600, 8
	srv := startNatsServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	ps := natsConnect(t, srv.URL, natspubsub.Options{Prefix: "sigkill", Lease: 2 * time.Second, ConfirmAck: true})
	tp := ps.Topic("sigkill")
	data := make([][]byte, n)
	for i := range data {
		data[i] = fmt.Appendf(nil, "k-%d", i)
	}
	enqueueParallel(t, tp, data)

	var mu sync.Mutex
	rejectedBefore := map[string]bool{} // Reject returned nil before the kill
	rejected := map[string]bool{}       // Reject returned nil, ever
	var deliveredAfter []string         // delivered after the restart
	// killing is set before the kill, restarted after it: a Reject that
	// returned nil and then saw killing unset returned before the kill (one
	// that waited across the restart and succeeded after it does not
	// count, though its Dequeue was before: its message may well have
	// been delivered again meanwhile, its lease on a restarted server).
	var killing, restarted atomic.Bool
	enough := make(chan struct{})
	var closeEnough sync.Once

	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for cctx.Err() == nil {
				dctx, dcancel := context.WithTimeout(cctx, natsCallTimeout)
				m, err := tp.Dequeue(dctx)
				dcancel()
				if err != nil {
					continue
				}
				after := restarted.Load()
				if after {
					mu.Lock()
					deliveredAfter = append(deliveredAfter, m.ID())
					mu.Unlock()
				}
				rctx, rcancel := context.WithTimeout(cctx, natsCallTimeout)
				err = pubsub.Reject(rctx, m, errors.New("no"))
				rcancel()
				if err != nil {
					continue // the server is down: the message comes back
				}
				before := !killing.Load()
				mu.Lock()
				rejected[m.ID()] = true
				if before {
					rejectedBefore[m.ID()] = true
					if len(rejectedBefore) == killAfter {
						closeEnough.Do(func() { close(enough) })
					}
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatal("the consumers did not reject enough messages before the kill")
	}
	killing.Store(true)
	srv.kill() // SIGKILL, while the consumers reject
	mu.Lock()
	before := len(rejectedBefore)
	mu.Unlock()
	restarted.Store(true)
	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	// Every message ends dead: some whose Reject failed at the kill were
	// kept dead all the same, and are not delivered again.
	var dead []admin.DeadMessage
	for {
		var err error
		if dead, err = admin.ListDead(ctx, tp, 0); err != nil {
			t.Fatal(err)
		}
		if distinct(dead) == n {
			break
		}
		select {
		case <-ctx.Done():
			mu.Lock()
			t.Fatalf("%d of %d messages dead by the end (%d rejected)", distinct(dead), n, len(rejected))
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()

	var both []string
	for _, id := range deliveredAfter {
		if rejectedBefore[id] {
			both = append(both, id)
		}
	}
	t.Logf("%d rejected before the kill, %d deliveries after the restart", before, len(deliveredAfter))
	if len(both) > 0 {
		t.Fatalf("%d messages dead before the kill were delivered again after the restart (e.g. %s)", len(both), both[0])
	}
}

// distinct counts the messages of dead.
func distinct(dead []admin.DeadMessage) int {
	ids := map[string]bool{}
	for _, d := range dead {
		ids[d.ID] = true
	}
	return len(ids)
}
