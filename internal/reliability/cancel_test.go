package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

const (
	cancelRounds = 400
	cancelBatch  = 10
)

// Fault 4. Contexts canceled at random moments during Enqueue and
// EnqueueBatch never leave a partial batch, a corrupted payload, or a
// message whose enqueue reported failure; every enqueue that succeeded is
// there exactly once. (400 calls per backend, half of them batches of 10.)
func TestProducerCancellation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s := b.new(t, config{Capacity: 4}) // a small channel, so that enqueues block
		tp := s.ps.Topic("cancel")

		// A consumer collects every payload, slowly enough for the channel
		// backend's Enqueue to block.
		var mu sync.Mutex
		got := map[string]int{}
		cctx, stop := context.WithCancel(ctx)
		wg := consumeUntil(cctx, tp, 1, func(m pubsub.Message) {
			mu.Lock()
			got[string(m.Data())]++
			mu.Unlock()
			if b.name == "channelpubsub" {
				time.Sleep(50 * time.Microsecond)
			}
			ackPersistently(cctx, m)
		})

		type call struct {
			items []string
			err   error
		}
		// Cancel at random within twice the time a call takes, so that
		// cancellation lands before, during and after the work.
		spread := callTime(t, ctx, tp)
		var calls []call
		for i := range cancelRounds {
			cctx, ccancel := context.WithCancel(ctx)
			switch i % 4 {
			case 0:
				ccancel() // canceled before the call
			default:
				time.AfterFunc(time.Duration(rand.Int64N(int64(4*spread))), ccancel)
			}
			var c call
			if i%2 == 0 {
				c.items = []string{fmt.Sprintf("single-%d", i)}
				c.err = tp.Enqueue(cctx, []byte(c.items[0]))
			} else {
				data := make([][]byte, cancelBatch)
				for j := range data {
					c.items = append(c.items, fmt.Sprintf("batch-%d-%d", i, j))
					data[j] = []byte(c.items[j])
				}
				c.err = pubsub.EnqueueBatch(cctx, tp, data)
			}
			ccancel()
			if c.err != nil && !errors.Is(c.err, context.Canceled) {
				t.Errorf("call %d: %v, want nil or context.Canceled", i, c.err)
			}
			calls = append(calls, c)
		}

		// Wait until the consumer has seen every message that exists.
		want := 0
		for _, c := range calls {
			if c.err == nil {
				want += len(c.items)
			}
		}
		if s.db != nil {
			if err := s.db.DB.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events_all WHERE topic = 'cancel'").Scan(&want); err != nil {
				t.Fatal(err)
			}
		}
		for {
			mu.Lock()
			n := 0
			for _, k := range got {
				n += k
			}
			mu.Unlock()
			if n >= want {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the consumer saw %d of %d messages", n, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // anything else would show up now
		stop()
		wg.Wait()

		mu.Lock()
		defer mu.Unlock()
		known := map[string]bool{}
		var ok, failed, phantom, partial, missing, twice int
		for i, c := range calls {
			present := 0
			for _, it := range c.items {
				known[it] = true
				if got[it] > 0 {
					present++
				}
				if got[it] > 1 {
					twice++
				}
			}
			switch {
			case c.err == nil:
				ok++
				if present != len(c.items) {
					missing++
					t.Errorf("call %d succeeded, but %d of its %d messages exist", i, present, len(c.items))
				}
			default:
				failed++
				switch {
				case present == 0:
				case present == len(c.items) && errors.Is(c.err, dbpubsub.ErrOutcomeUnknown):
					// in doubt (sent, then its ctx ended): committed, all or none
				case present == len(c.items):
					phantom++
					t.Errorf("call %d returned %v, yet its %d message(s) exist: a phantom", i, c.err, present)
				default:
					partial++
					t.Errorf("call %d returned %v, and %d of its %d messages exist: a partial batch", i, c.err, present, len(c.items))
				}
			}
		}
		for d := range got {
			if !known[d] && !strings.Contains(d, "-warm-") {
				t.Errorf("a message %q that no call enqueued (corrupted?)", d)
			}
			if !strings.HasPrefix(d, "single-") && !strings.HasPrefix(d, "batch-") {
				t.Errorf("corrupted payload %q", d)
			}
		}
		if ok == 0 || failed == 0 {
			t.Errorf("%d calls succeeded and %d were canceled: want some of each", ok, failed)
		}
		t.Logf("%s: %d calls succeeded, %d canceled; %d phantoms, %d partial batches, %d missing, %d delivered twice",
			b.name, ok, failed, phantom, partial, missing, twice)
		note := fmt.Sprintf("%d calls (half batches of %d), %d canceled; %d phantom, %d partial", len(calls), cancelBatch, failed, phantom, partial)
		r := result{fault: "producer cancellation (" + b.name + ")", duplicates: twice, note: note}
		for _, c := range calls {
			if c.err == nil {
				r.messages += len(c.items)
				for _, it := range c.items {
					if got[it] > 0 {
						r.acked++
					}
				}
			}
		}
		r.report(t)
	})
}

// callTime measures how long an Enqueue and a batch take on tp, on average;
// their messages are consumed like the others.
func callTime(t *testing.T, ctx context.Context, tp pubsub.Topic) time.Duration {
	t.Helper()
	start := time.Now()
	for i := range 10 {
		if err := tp.Enqueue(ctx, fmt.Appendf(nil, "single-warm-%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{fmt.Appendf(nil, "batch-warm-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return max(time.Since(start)/20, 100*time.Microsecond)
}

// Fault 4, the worst moment: the producer's ctx ends while the INSERT runs
// on the server. The server finishes and commits the statement, so the
// call must not report a plain failure then (a phantom: the producer
// retries and the message exists twice): it returns by its ctx's
// deadline, with ctx's error wrapping dbpubsub.ErrOutcomeUnknown (in
// doubt). A trigger in the test's own schema makes each INSERT take
// 2 s, and the ctx ends after 100 ms: the call returns by its ctx's
// deadline (plus a slack of 500 ms for a loaded machine, well short of
// the statement's end); if it returned ctx's error
// alone (not sent), its message must not be committed; if nil, it must be
// stored once.
func TestEnqueueCanceledMidStatement(t *testing.T) {
	_, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ps := newPubSub(t, db, quietOptions(0))
	tp := ps.Topic("phantom")
	if err := tp.Enqueue(ctx, []byte("warm-up")); err != nil { // looks the table up
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$`,
		`CREATE TRIGGER slow_insert BEFORE INSERT ON conveyor_events FOR EACH ROW EXECUTE FUNCTION slow_insert()`,
		`CREATE TRIGGER slow_insert BEFORE INSERT ON ` + dbpubsubtest.ReadyTable(t, db, "phantom") + ` FOR EACH ROW EXECUTE FUNCTION slow_insert()`,
	} {
		if _, err := db.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		data    string
		enqueue func(ctx context.Context) error
	}{
		{"Enqueue", "single", func(ctx context.Context) error { return tp.Enqueue(ctx, []byte("single")) }},
		{"EnqueueBatch", "batch", func(ctx context.Context) error {
			return pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("batch")})
		}},
	} {
		cctx, ccancel := context.WithTimeout(ctx, 100*time.Millisecond)
		deadline, _ := cctx.Deadline()
		err := c.enqueue(cctx)
		returned := time.Now()
		ccancel()
		if late := returned.Sub(deadline); late > 500*time.Millisecond {
			t.Errorf("%s returned %v after its ctx's deadline (the INSERT takes 2 s): it awaited the statement", c.name, late)
		}
		time.Sleep(3 * time.Second) // the server finishes the statement meanwhile
		var n int
		if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events_all WHERE data = $1", []byte(c.data)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		switch {
		case errors.Is(err, dbpubsub.ErrOutcomeUnknown):
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s returned %q: in doubt, but without its ctx's error", c.name, err)
			}
			if n > 1 {
				t.Errorf("%s in doubt, and its message is stored %d times, want at most once", c.name, n)
			}
		case err != nil && n != 0:
			t.Errorf("%s returned %q (not sent), yet its message was committed (%d row): a phantom", c.name, err, n)
		case err == nil && n != 1:
			t.Errorf("%s succeeded, and its message is stored %d times, want once", c.name, n)
		}
		t.Logf("%s with a ctx ending mid-INSERT: %v, %d row(s)", c.name, err, n)
	}
}

// The same moment on the consumer's side: an Ack whose ctx ends while its
// UPDATE runs on the server returns the truth: nil and the message is
// finished, or an error and the message is still leased to the delivery
// (which can then be acked again). A trigger slows the acking UPDATE to
// 300 ms; the ctx ends after 100 ms.
func TestAckCanceledMidStatement(t *testing.T) {
	_, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ps := newPubSub(t, db, quietOptions(10*time.Second))
	tp := ps.Topic("ack")
	if err := tp.Enqueue(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION slow_ack() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.status = 'finished' THEN PERFORM pg_sleep(0.3); END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER slow_ack BEFORE UPDATE ON conveyor_events FOR EACH ROW EXECUTE FUNCTION slow_ack()`,
	} {
		if _, err := db.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	actx, acancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = m.Ack(actx)
	acancel()
	time.Sleep(time.Second) // the server finishes the statement meanwhile
	var status string
	if err := db.DB.QueryRowContext(ctx, "SELECT status FROM conveyor_events_all WHERE data = 'a'").Scan(&status); err != nil {
		t.Fatal(err)
	}
	t.Logf("Ack with a ctx ending mid-UPDATE: %v; the row is %s", err, status)
	switch {
	case err == nil && status != "finished":
		t.Errorf("Ack succeeded, but the message is %s", status)
	case err != nil && status == "finished":
		t.Errorf("Ack returned %v, yet the message was acked", err)
	case err != nil:
		if err := m.Ack(ctx); err != nil {
			t.Errorf("Ack again after a failed Ack that changed nothing: %v", err)
		}
	}
}

// Dequeue calls whose ctx ends at random moments lose no message and leave
// none leased to nobody: 2,000 messages, 4 consumers whose every Dequeue
// has a 0-2 ms deadline; every message is acked on its first delivery (a
// row lost by a canceled Dequeue would come back only after its lease, as a
// second delivery).
func TestConsumerCancellation(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const n = 2000
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s := b.new(t, config{Lease: 30 * time.Second, Capacity: 4096})
		tp := s.ps.Topic("dq")
		enqueueAll(t, tp, payloads("q", n))
		cnt := newCounter()
		var canceled atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for cnt.ackedCount() < n && ctx.Err() == nil {
					dctx, dcancel := context.WithTimeout(ctx, time.Duration(rand.IntN(2000))*time.Microsecond)
					m, err := tp.Dequeue(dctx)
					dcancel()
					if err != nil {
						canceled.Add(1)
						continue
					}
					cnt.deliver(m)
					if ackPersistently(ctx, m) {
						cnt.ack(m)
					}
				}
			}()
		}
		wg.Wait()
		acked, redeliveries, ackedTwice := cnt.tally()
		if redeliveries != 0 || ackedTwice != 0 {
			t.Errorf("%d redeliveries and %d double acks, want none: a canceled Dequeue lost a row until its lease ran out", redeliveries, ackedTwice)
		}
		st, err := admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		if st != (admin.Stats{}) {
			t.Errorf("left after all acks: %+v", st)
		}
		result{fault: "consumer cancellation (" + b.name + ")", messages: n, acked: acked, dead: int(st.Dead), duplicates: redeliveries,
			note: fmt.Sprintf("%d Dequeue calls ended by their 0-2 ms deadline", canceled.Load())}.report(t)
	})
}

// A batch larger than the room left in a channelpubsub topic goes in whole
// or not at all, also when ctx ends while it waits for room (before 12:45
// on 2026-11-29 it left the items before the wait enqueued: a partial
// batch). A second batch waiting behind the first one and giving up adds
// nothing.
func TestBatchAllOrNoneOnFullTopic(t *testing.T) {
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	tp := ps.Topic("batch")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var want []string
	for i, size := range []int{5, 3} {
		bctx, bcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		items := payloads(fmt.Sprintf("b%d", i), size)
		err := pubsub.EnqueueBatch(bctx, tp, items) // room for 2 only, nobody consumes yet
		bcancel()
		t.Logf("batch %d of %d items on a topic with room for 2: %v", i, size, err)
		if err == nil {
			for _, it := range items {
				want = append(want, string(it))
			}
		} else if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("batch %d: %v, want nil or context.DeadlineExceeded", i, err)
		}
	}
	var got []string
	for {
		dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		m, err := tp.Dequeue(dctx)
		dcancel()
		if err != nil {
			break
		}
		got = append(got, string(m.Data()))
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delivered %q, want exactly the batches that succeeded, in order: %q", got, want)
	}
}

// The same moment in a caller's transaction: the Enqueue's statement is
// canceled when its ctx ends, which aborts the transaction, so the call
// returns its ctx's error, not in doubt, and nothing of the transaction
// can commit. A trigger makes the INSERT take 2 s; the ctx ends after
// 100 ms.
func TestEnqueueInTxCanceledMidStatement(t *testing.T) {
	_, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ps := newPubSub(t, db, quietOptions(0))
	tp := ps.Topic("intx")
	if err := tp.Enqueue(ctx, []byte("warm-up")); err != nil { // looks the table up
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$`,
		`CREATE TRIGGER slow_insert BEFORE INSERT ON ` + dbpubsubtest.ReadyTable(t, db, "intx") + ` FOR EACH ROW EXECUTE FUNCTION slow_insert()`,
	} {
		if _, err := db.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = tp.Enqueue(dbpubsub.WithTx(cctx, tx), []byte("in tx"))
	ccancel()
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, dbpubsub.ErrOutcomeUnknown) {
		t.Errorf("Enqueue in a transaction with a ctx ending mid-INSERT: %v, want its ctx's error, not in doubt", err)
	}
	if err := tx.Commit(); err == nil {
		t.Error("the transaction committed after its Enqueue's statement was canceled")
	}
	var n int
	if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events_all WHERE data = $1", []byte("in tx")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the Enqueue in the aborted transaction is stored %d times, want none", n)
	}
}
