package reliability

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

const (
	restartProducers = 2
	restartPerProd   = 1500
	restartTopic     = "db-restart"
)

// Fault 3. On a throwaway cluster of its own, PostgreSQL is restarted
// (pg_ctl restart -m fast) while producers enqueue and consumers drain.
// Producers get errors, which are not the contract's sentinels (nothing is
// wrong with their call) and succeed when retried; consumers recover by
// themselves; nothing is lost.
func TestDatabaseRestart(t *testing.T) { eachAckMode(t, testDatabaseRestart) }

func testDatabaseRestart(t *testing.T, mode ackMode) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	db := openDB(t, c.DSN)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatalf("migrations.Migrate: %v", err)
	}
	ps := newPubSub(t, db, mode.options(2*time.Second))
	tp := ps.Topic(restartTopic)

	cnt := newCounter()
	cctx, stopConsumers := context.WithCancel(ctx)
	cwg := consumeUntil(cctx, tp, 4, func(m pubsub.Message) {
		cnt.deliver(m)
		if ackPersistently(cctx, m) {
			cnt.ack(m)
		}
	})

	var enqueued, prodErrs atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	var pwg sync.WaitGroup
	for p := range restartProducers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for i := range restartPerProd {
				data := fmt.Appendf(nil, "r-%d-%d", p, i)
				for {
					err := tp.Enqueue(ctx, data)
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						return
					}
					prodErrs.Add(1)
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					time.Sleep(50 * time.Millisecond) // then retry, as a producer would
				}
				enqueued.Add(1)
				if i%4 == 0 {
					time.Sleep(time.Millisecond) // spread the enqueues over the restart
				}
			}
		}()
	}

	// Restart once a third is enqueued and consumption is under way.
	for enqueued.Load() < restartProducers*restartPerProd/3 || cnt.ackedCount() == 0 {
		if ctx.Err() != nil {
			t.Fatal("producers and consumers did not get going")
		}
		time.Sleep(5 * time.Millisecond)
	}
	atRestart := enqueued.Load()
	ackedAtRestart := cnt.ackedCount()
	began := time.Now()
	if err := c.restart(); err != nil {
		t.Fatal(err)
	}
	restartTook := time.Since(began)
	pwg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("producers did not finish: %d of %d enqueued", enqueued.Load(), restartProducers*restartPerProd)
	}
	total := restartProducers * restartPerProd
	if err := waitSettled(ctx, db, restartTopic, total); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	stopConsumers()
	cwg.Wait()

	if firstErr != nil {
		for _, s := range []error{pubsub.ErrClosed, pubsub.ErrInvalidTopic, pubsub.ErrTooLarge, migrations.ErrNotMigrated} {
			if errors.Is(firstErr, s) {
				t.Errorf("a producer got %v during the restart: it must be a retryable error, not %v", firstErr, s)
			}
		}
	}
	acked, dead, redeliveries, storedTwice := dbCount(t, db, restartTopic)
	_, inProcRedeliveries, ackedTwice := cnt.tally()
	// A payload stored twice is a retried enqueue's, counted below.
	twice := mode.checkAckedTwice(t, ackedTwice, 0)
	result{
		fault: "database restart (pg_ctl restart -m fast), " + mode.name, messages: total, acked: acked, dead: dead,
		duplicates: max(redeliveries, inProcRedeliveries) + storedTwice,
		note: fmt.Sprintf("restart took %v with %d enqueued and %d acked; producers got %d errors and retried (first: %v); %d payloads stored twice by a retried enqueue; %d acked twice (queued acks cut off)",
			restartTook.Round(time.Millisecond), atRestart, ackedAtRestart, prodErrs.Load(), firstErr, storedTwice, twice),
	}.report(t)
}
