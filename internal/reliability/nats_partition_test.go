package reliability

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/faultproxy"
	"github.com/conveyorgo/conveyor/natspubsub"
)

// Fault (issue 30, item 12): the network between a PubSub and its server
// fails (a proxy stops forwarding and reading, so the socket buffers fill
// and nats.go's writes block) while producers enqueue messages of about
// 1 MB. Every Enqueue returns by its ctx's deadline, give or take
// natsEnqueueSlack measured against that deadline, with nil or an error
// (ctx's own once the deadline passed); once the network is back, Enqueue
// works again.
func TestNatsEnqueueDeadlineOnPartition(t *testing.T) {
	const (
		producers = 8
		perProd   = 4
		deadline  = 3 * time.Second
		// slack is how long after its ctx's deadline a call may return:
		// the scheduling of a loaded machine, not a write.
		slack = time.Second
		// partitionFor is how long the network stays down: longer than
		// every producer's calls, so that all of them meet it.
		partitionFor = perProd*deadline + deadline
	)
	srv := startNatsServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	px := faultproxy.Start(t, natsHostPort(srv.URL))
	// The default request timeout (10 s), longer than the calls' ctx, as
	// in the report.
	ps := natsConnect(t, "nats://"+px.Addr(), natspubsub.Options{Prefix: "partition"})
	tp := ps.Topic("partition")
	if err := tp.Enqueue(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), ps.MaxDataSize()-1024)

	px.Partition()
	healed := make(chan struct{})
	heal := time.AfterFunc(partitionFor, func() { px.Heal(); close(healed) })
	defer heal.Stop()

	type call struct {
		late time.Duration // how long after its ctx's deadline it returned (<= 0: in time)
		err  error
	}
	calls := make(chan call, producers*perProd)
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for range perProd {
				cctx, ccancel := context.WithTimeout(ctx, deadline)
				err := tp.Enqueue(cctx, data)
				returned := time.Now()
				d, _ := cctx.Deadline()
				ccancel()
				calls <- call{late: returned.Sub(d), err: err}
			}
		})
	}
	wg.Wait()
	close(calls)
	var inTime, late, ok, deadlineErrs, otherErrs int
	var latest time.Duration
	for c := range calls {
		switch {
		case c.err == nil:
			ok++
		case errors.Is(c.err, context.DeadlineExceeded):
			deadlineErrs++
		default:
			otherErrs++
		}
		latest = max(latest, c.late)
		if c.late > slack {
			late++
			continue
		}
		inTime++
		if c.late > 0 && c.err != nil && !errors.Is(c.err, context.DeadlineExceeded) {
			t.Errorf("an Enqueue returned after its ctx's deadline with %v, want an error wrapping context.DeadlineExceeded", c.err)
		}
	}
	t.Logf("during the partition: %d Enqueues returned nil, %d ctx's deadline, %d another error; the latest %v after its deadline",
		ok, deadlineErrs, otherErrs, latest.Round(time.Millisecond))
	if late > 0 {
		t.Errorf("%d of %d Enqueues returned more than %v after their ctx's deadline (the latest %v after)",
			late, producers*perProd, slack, latest.Round(time.Millisecond))
	}

	// Once the network is back, Enqueue works again.
	select {
	case <-healed:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	const want = 3
	var stored, failed int
	var lastErr error
	for stored < want {
		if ctx.Err() != nil {
			t.Fatalf("after the partition: %d of %d Enqueues succeeded (%d failed, the last with %v) before the test's ctx ended",
				stored, want, failed, lastErr)
		}
		cctx, ccancel := context.WithTimeout(ctx, deadline)
		err := tp.Enqueue(cctx, []byte("after"))
		ccancel()
		if err != nil {
			failed, lastErr = failed+1, err
			select { // as an application would, before it tries again
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		stored++
	}
	t.Logf("after the partition: %d Enqueues succeeded, %d failed first (the last with %v)", stored, failed, lastErr)
}
