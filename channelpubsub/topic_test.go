package channelpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

func TestEnqueueBlocksWhenFull(t *testing.T) {
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	tp := ps.Topic("full")
	ctx := context.Background()
	for i := range 2 {
		if err := tp.Enqueue(ctx, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := tp.Enqueue(short, []byte{2}); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `topic "full"`) {
		t.Fatalf("Enqueue on a full topic: %v, want it to block until ctx ends, and the error to name the topic", err)
	}
	// The refused message was not added: room for exactly one more.
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Ack(ctx)
	done := make(chan error, 1)
	go func() { done <- tp.Enqueue(ctx, []byte{3}) }()
	if err := <-done; err != nil {
		t.Fatalf("Enqueue after room was made: %v", err)
	}
	for _, want := range []byte{1, 3} {
		m, err := tp.Dequeue(ctx)
		if err != nil || m.Data()[0] != want {
			t.Fatalf("Dequeue = %v, %v; want message %d", m, err, want)
		}
		_ = m.Ack(ctx)
	}
	s, err := admin.TopicStats(ctx, tp)
	if err != nil || s != (admin.Stats{}) {
		t.Fatalf("Stats = %+v, %v; want an empty topic", s, err)
	}
}

func TestRedeliveryIntoAFullTopicWaits(t *testing.T) {
	// A nacked message whose topic is full waits for room; it is not lost
	// and does not block the consumer that nacked it.
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{
		Capacity: 1,
		Retry:    pubsub.RetryPolicy{MinBackoff: time.Millisecond, Jitter: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	tp := ps.Topic("t")
	_ = tp.Enqueue(ctx, []byte("first"))
	m, _ := tp.Dequeue(ctx)
	_ = tp.Enqueue(ctx, []byte("second")) // fills the topic
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got[string(m.Data())] = true
		_ = m.Ack(ctx)
	}
	if !got["first"] || !got["second"] {
		t.Fatalf("got %v, want first and second", got)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tp := ps.Topic("t")
	_ = tp.Enqueue(ctx, []byte("leased"))
	leased, _ := tp.Dequeue(ctx)
	_ = pubsub.EnqueueDelayed(ctx, tp, []byte("later"), time.Hour)
	_ = tp.Enqueue(ctx, []byte("fills"))
	blocked := make(chan error, 1)
	go func() { blocked <- tp.Enqueue(ctx, []byte("waits")) }()

	if err := ps.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-blocked; !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Enqueue blocked by a full topic at Close: %v, want ErrClosed", err)
	}
	if err := leased.Ack(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Ack after the PubSub closed: %v, want ErrClosed", err)
	}
	if err := ps.Close(); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if _, err := ps.Topic("new").Dequeue(ctx); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Dequeue on a topic opened after Close: %v, want ErrClosed", err)
	}
	// goleak in TestMain checks that no goroutine is left behind.
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name  string
		opts  channelpubsub.Options
		field string
	}{
		{"Capacity", channelpubsub.Options{Capacity: -1}, "Capacity"},
		{"Lease", channelpubsub.Options{Lease: -time.Second}, "Lease"},
		{"MaxDataSize", channelpubsub.Options{MaxDataSize: -1}, "MaxDataSize"},
		{"Retention", channelpubsub.Options{Retention: -1}, "Retention"},
		{"Retry", channelpubsub.Options{Retry: pubsub.RetryPolicy{MaxAttempts: -1}}, "MaxAttempts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := channelpubsub.NewWithOptions(c.opts)
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("NewWithOptions: %v, want an error naming %s", err, c.field)
			}
		})
	}
}

// An acked message keeps its unique key for Options.Retention, as a
// finished row keeps it on dbpubsub until pruned; then the key is free.
func TestUniqueKeyKeptForRetention(t *testing.T) {
	const retention = 200 * time.Millisecond
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	tp := ps.Topic("u")
	if ok, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("1")); !ok || err != nil {
		t.Fatalf("first EnqueueUnique = %v, %v", ok, err)
	}
	m, _ := tp.Dequeue(ctx)
	_ = m.Ack(ctx)
	if ok, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("2")); ok || err != nil {
		t.Fatalf("EnqueueUnique just after the first was acked = %v, %v; want the key still taken", ok, err)
	}
	time.Sleep(retention + 50*time.Millisecond)
	if ok, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("2")); !ok || err != nil {
		t.Fatalf("EnqueueUnique past the retention = %v, %v; want the key free", ok, err)
	}
	if _, err := pubsub.EnqueueUnique(ctx, tp, "", []byte("3")); err == nil {
		t.Fatal("EnqueueUnique with an empty key: want an error")
	}
}

func TestBatchIsAllOrNone(t *testing.T) {
	ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	tp := ps.Topic("batch")
	batch := [][]byte{[]byte("0"), []byte("1"), []byte("2"), []byte("3"), []byte("4")}

	// More than the channel holds, nobody consuming: the batch goes in
	// whole, the overflow waiting for room in order.
	if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	if st, _ := admin.TopicStats(ctx, tp); st.Ready != 5 {
		t.Fatalf("after a batch of 5: %d ready, want 5", st.Ready)
	}
	// A second batch waits for the first to be in; when its ctx ends
	// first, none of it is enqueued.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := pubsub.EnqueueBatch(short, tp, batch); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second EnqueueBatch: %v, want context.DeadlineExceeded", err)
	}
	for i := range 5 {
		m, err := tp.Dequeue(ctx)
		if err != nil || string(m.Data()) != fmt.Sprint(i) {
			t.Fatalf("Dequeue %d = %v, %v", i, m, err)
		}
		_ = m.Ack(ctx)
	}
	// An empty batch takes the slot once the overflow of the first is in.
	if err := pubsub.EnqueueBatch(ctx, tp, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := admin.TopicStats(ctx, tp); st != (admin.Stats{}) {
		t.Fatalf("after draining: %+v, want nothing left from the refused batch", st)
	}
}

// TestEnqueueOwned checks that a topic with one subscription keeps the
// data handed over by EnqueueOwned itself, that Enqueue still keeps a
// copy, and that several subscriptions get a copy each.
func TestEnqueueOwned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := channelpubsub.New()
	t.Cleanup(func() { _ = ps.Close() })

	tp := ps.Topic("owned")
	o, ok := tp.(wrap.OwnedEnqueuer)
	if !ok {
		t.Fatalf("%T is no wrap.OwnedEnqueuer", tp)
	}
	owned, copied := []byte("handed over"), []byte("copied")
	if err := o.EnqueueOwned(ctx, owned); err != nil {
		t.Fatal(err)
	}
	if err := tp.Enqueue(ctx, copied); err != nil {
		t.Fatal(err)
	}
	copied[0] = 'X' // Enqueue's caller may reuse its data
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Data(); len(d) == 0 || &d[0] != &owned[0] {
		t.Errorf("the delivery of EnqueueOwned holds %q at %p, want the data handed over, at %p", d, d, owned)
	}
	if m, err = tp.Dequeue(ctx); err != nil {
		t.Fatal(err)
	}
	if d := string(m.Data()); d != "copied" {
		t.Errorf("the delivery of Enqueue holds %q, want %q", d, "copied")
	}

	a, err := ps.Subscribe(ctx, "fanned", "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ps.Subscribe(ctx, "fanned", "b")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("fanned out")
	if err := a.(wrap.OwnedEnqueuer).EnqueueOwned(ctx, data); err != nil {
		t.Fatal(err)
	}
	ma, err := a.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	da, db := ma.Data(), mb.Data()
	if string(da) != "fanned out" || string(db) != "fanned out" || &da[0] == &db[0] {
		t.Errorf("two subscriptions hold %q at %p and %q at %p, want a copy each", da, da, db, db)
	}
}
