package dbpubsub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
)

// A fresh topic first used by many goroutines at once, on a pool of two
// connections: the first-use look-ups (the ready table, the subscription
// consumers declare, the route) never hold a pool connection while they
// wait for another, so every call makes progress. Each call has a
// deadline well below Options.StatementTimeout, the only thing that would
// free a connection held that way.
func TestFirstUseOnSmallPool(t *testing.T) {
	_, db := newStore(t)
	db.DB.SetMaxOpenConns(2)
	db.DB.SetMaxIdleConns(2)
	ps := newPubSub(t, db, dbpubsub.Options{StatementTimeout: time.Minute})
	const (
		producers = 50 // each on a Topic handle of its own
		consumers = 100
		perProd   = 2
		callLimit = 10 * time.Second
	)
	const topic = "first-use-small-pool"
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		received int
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), callLimit)
			defer cancel()
			m, err := ps.Topic(topic).Dequeue(ctx)
			if err != nil {
				fail(fmt.Errorf("consumer %d: Dequeue: %w", i, err))
				return
			}
			if err := m.Ack(ctx); err != nil {
				fail(fmt.Errorf("consumer %d: Ack: %w", i, err))
				return
			}
			mu.Lock()
			received++
			mu.Unlock()
		}()
	}
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tp := ps.Topic(topic)
			<-start
			for j := range perProd {
				ctx, cancel := context.WithTimeout(context.Background(), callLimit)
				err := tp.Enqueue(ctx, fmt.Appendf(nil, "p%d-%d", i, j))
				cancel()
				if err != nil {
					fail(fmt.Errorf("producer %d: Enqueue %d: %w", i, j, err))
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if i == 5 {
			t.Errorf("… and %d more", len(errs)-5)
			break
		}
		t.Error(err)
	}
	if received != consumers {
		t.Errorf("%d of %d consumers received a message (%d enqueued)", received, consumers, producers*perProd)
	}
}
