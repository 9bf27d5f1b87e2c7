package dbpubsub_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// consumeAll dequeues and acks n messages of tp with w goroutines.
func consumeAll(t *testing.T, tp pubsub.Topic, n, w int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, w)
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				m, err := tp.Dequeue(ctx)
				if err == nil {
					err = m.Ack(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func enqueueN(t *testing.T, tp pubsub.Topic, n int) {
	t.Helper()
	data := make([][]byte, n)
	for i := range data {
		data[i] = []byte{byte(i)}
	}
	if err := pubsub.EnqueueBatch(context.Background(), tp, data); err != nil {
		t.Fatal(err)
	}
}

// Close writes the acks still queued: none of them is delivered again.
func TestAsyncAckWrittenByClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Lease: time.Hour})
	tp := ps.Topic("t")
	// Many more acks than the two settlers take in one statement each
	// (maxSettleBatch), so that some stay queued when Close begins.
	const n = 4000
	enqueueN(t, tp, n)
	ms := make([]pubsub.Message, n)
	for i := range ms {
		ms[i] = dequeueWithin(t, tp, 10*time.Second)
	}
	// Hold the rows, so that the acks stay queued behind a blocked
	// statement until Close is under way.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT id FROM conveyor_events FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// Two acks occupy both settlers; the rest wait in the queue.
	for i, m := range ms {
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- ps.Close() }()
	time.Sleep(200 * time.Millisecond)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, db, "status = 'finished'"); got != n {
		t.Fatalf("%d rows finished after Close, want all %d acks written", got, n)
	}
}

// Flush and Stats see the acks queued before them.
func TestAsyncAckFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Lease: time.Hour})
	tp := ps.Topic("t")
	enqueueN(t, tp, 200)
	consumeAll(t, tp, 100, 4)
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, "status = 'finished'"); n != 100 {
		t.Fatalf("%d rows finished after Flush, want the 100 acked", n)
	}
	consumeAll(t, tp, 100, 4)
	st, err := admin.TopicStats(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	if st.Processing != 0 || st.Ready != 0 {
		t.Fatalf("Stats after acking all: %+v, want nothing ready or processing", st)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := ps.Flush(ctx); err != nil {
		t.Fatalf("Flush with nothing queued and an ended ctx: %v, want nil", err)
	}
}

// A queued ack that the database refuses (the delivery lost the row) is
// logged, and the row is not finished.
func TestAsyncAckLostRowIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var logs syncbuf.Buffer
	ps := newPubSub(t, db, dbpubsub.Options{Lease: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	tp := ps.Topic("t")
	enqueueN(t, tp, 1)
	m := dequeueWithin(t, tp, 10*time.Second)
	// Another delivery took the row meanwhile.
	if _, err := db.ExecContext(ctx, "UPDATE conveyor_events SET token = token + 1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatalf("asynchronous Ack: %v, want nil (queued)", err)
	}
	if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrSettled) {
		t.Fatalf("second Ack: %v, want ErrSettled", err)
	}
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, "status = 'processing'"); n != 1 {
		t.Fatalf("%d rows processing, want the row left to its other delivery", n)
	}
	got := logs.String()
	if !strings.Contains(got, "asynchronous ack not written") || !strings.Contains(got, pubsub.ErrLeaseExpired.Error()) ||
		!strings.Contains(got, "id="+m.ID()) {
		t.Fatalf("log %q, want the unwritten ack of message %s and why", got, m.ID())
	}
}

// In the second half of its lease, an ack waits for its commit, so that a
// lost lease is reported to the caller.
func TestAsyncAckLateInLeaseReportsLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	const lease = 400 * time.Millisecond
	ps := newPubSub(t, db, dbpubsub.Options{Lease: lease})
	tp := ps.Topic("t")
	enqueueN(t, tp, 1)
	m := dequeueWithin(t, tp, 10*time.Second)
	time.Sleep(lease/2 + 50*time.Millisecond)
	if _, err := db.ExecContext(ctx, "UPDATE conveyor_events SET token = token + 1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); !errors.Is(err, pubsub.ErrLeaseExpired) {
		t.Fatalf("Ack late in a lost lease: %v, want ErrLeaseExpired", err)
	}
}
