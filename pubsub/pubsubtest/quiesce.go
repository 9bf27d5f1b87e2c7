package pubsubtest

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The cases of the quiesce gate (admin.Quiescer).
var quiesceCases = []testCase{
	{"QuiesceWaitsForDeliveriesInHand", testQuiesce},
	{"QuiesceContextEndsGateStaysClosed", testQuiesceContext},
	{"QuiesceLeaseRunsOut", testQuiesceLease},
	{"CloseWhileQuiesced", testQuiesceClose},
}

func needQuiesce(t *testing.T, h Harness) {
	t.Helper()
	need(t, h.Abilities.Quiesce, "the quiesce gate (admin.Quiescer)")
}

// quiesceAsync starts Quiesce on ps; its error comes on the channel.
func quiesceAsync(ctx context.Context, ps pubsub.PubSub) <-chan error {
	done := make(chan error, 1)
	go func() { done <- admin.Quiesce(ctx, ps) }()
	return done
}

// waitQuiesced waits until ps's gate is closed.
func waitQuiesced(t *testing.T, ps pubsub.PubSub) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		shut, err := admin.IsQuiesced(context.Background(), ps)
		if err != nil {
			t.Fatalf("IsQuiesced: %v", err)
		}
		if shut {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Quiesce did not close the gate")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stillWaiting fails the test if Quiesce (done) returned within d: what
// says what it must wait for.
func stillWaiting(t *testing.T, done <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Quiesce returned (%v) with %s", err, what)
	case <-time.After(d):
	}
}

func wantReturned(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(patience):
		t.Fatalf("Quiesce did not return %s", what)
		return nil
	}
}

func resumeConsumers(t *testing.T, ps pubsub.PubSub) {
	t.Helper()
	if err := admin.ResumeConsumers(context.Background(), ps); err != nil {
		t.Fatalf("ResumeConsumers: %v", err)
	}
}

// testQuiesce: Quiesce returns once the deliveries in hand, on every
// topic, were settled (acked, nacked); meanwhile and afterwards no Dequeue
// returns a message, not even one already waiting in the store when the
// gate closed, while enqueues work and a delivery's lease can be extended.
// Resume lets the waiting consumers go on, and every message comes, once.
func testQuiesce(t *testing.T, h Harness) {
	needQuiesce(t, h)
	ps := newPubSub(t, h, Config{Retry: pubsub.RetryPolicy{MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}})
	tp, other := open(t, ps, "quiesce"), open(t, ps, "quiesce-other")
	enqueue(t, tp, "a", "b")
	enqueue(t, other, "x")
	ma, mb, mx := dequeue(t, tp), dequeue(t, tp), dequeue(t, other)
	waiting := []<-chan pubsub.Message{waitingDequeue(t, tp), waitingDequeue(t, tp), waitingDequeue(t, other)}
	time.Sleep(50 * time.Millisecond) // let them wait in the store; the assertions hold either way

	done := quiesceAsync(context.Background(), ps)
	waitQuiesced(t, ps)
	enqueue(t, tp, "c")
	enqueue(t, other, "y")
	expectNone(t, open(t, ps, "quiesce"), 200*time.Millisecond)
	stillWaiting(t, done, 0, "three deliveries in hand")
	ack(t, ma)
	if h.Abilities.ExtendLease {
		if err := pubsub.ExtendLease(context.Background(), mb, time.Minute); err != nil {
			t.Fatalf("ExtendLease while quiesced: %v", err)
		}
	}
	if err := mb.Nack(context.Background()); err != nil {
		t.Fatalf("Nack while quiesced: %v", err)
	}
	stillWaiting(t, done, 100*time.Millisecond, "a delivery in hand on another topic")
	ack(t, mx)
	if err := wantReturned(t, done, "once the deliveries in hand were settled"); err != nil {
		t.Fatalf("Quiesce: %v", err)
	}
	// Quiesced: b is due again, c and y are ready; none goes out.
	expectNone(t, open(t, ps, "quiesce"), 300*time.Millisecond)
	for _, w := range waiting {
		select {
		case m := <-w:
			t.Fatalf("a Dequeue waiting when the gate closed returned %v while quiesced", m)
		default:
		}
	}
	if err := admin.Quiesce(context.Background(), ps); err != nil {
		t.Fatalf("Quiesce of a quiesced PubSub: %v", err)
	}

	resumeConsumers(t, ps)
	if shut, err := admin.IsQuiesced(context.Background(), ps); err != nil || shut {
		t.Fatalf("IsQuiesced after Resume = %v, %v; want false, nil", shut, err)
	}
	var got []string
	for _, w := range waiting {
		select {
		case m := <-w:
			if m == nil {
				t.FailNow()
			}
			got = append(got, string(m.Data()))
			if string(m.Data()) != "b" { // a waiting Dequeue took nothing while quiesced
				wantAttempt(t, h, m, 1)
			}
			ack(t, m)
		case <-time.After(patience):
			t.Fatal("Resume did not wake a waiting Dequeue")
		}
	}
	slices.Sort(got)
	if want := []string{"b", "c", "y"}; !slices.Equal(got, want) {
		t.Fatalf("after Resume the waiting consumers got %q, want %q (each once)", got, want)
	}
	resumeConsumers(t, ps) // resuming an open gate does nothing
	expectNone(t, tp, 200*time.Millisecond)
	expectNone(t, other, 100*time.Millisecond)
}

// testQuiesceContext: when ctx ends before the delivery in hand settles,
// Quiesce says so and the gate stays closed; Quiesce again returns once it
// settled. Resume while a Quiesce waits makes it return ErrResumed.
func testQuiesceContext(t *testing.T, h Harness) {
	needQuiesce(t, h)
	ps := newPubSub(t, h, Config{})
	tp := open(t, ps, "quiesce-ctx")
	enqueue(t, tp, "a")
	m := dequeue(t, tp)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	wantErr(t, "Quiesce whose ctx ends with a delivery in hand", admin.Quiesce(ctx, ps), context.DeadlineExceeded)
	waitQuiesced(t, ps)
	enqueue(t, tp, "b")
	expectNone(t, tp, 200*time.Millisecond)

	done := quiesceAsync(context.Background(), ps)
	stillWaiting(t, done, 100*time.Millisecond, "a delivery in hand")
	ack(t, m)
	if err := wantReturned(t, done, "once the delivery in hand was settled"); err != nil {
		t.Fatalf("Quiesce: %v", err)
	}
	resumeConsumers(t, ps)
	m = dequeue(t, tp)
	wantData(t, m, "b")

	done = quiesceAsync(context.Background(), ps)
	waitQuiesced(t, ps)
	resumeConsumers(t, ps)
	wantErr(t, "Quiesce resumed while it waited", wantReturned(t, done, "when resumed"), admin.ErrResumed)
	ack(t, m)
	expectNone(t, tp, 100*time.Millisecond)
}

// testQuiesceLease: a delivery never settled holds Quiesce until its
// lease runs out; its message then waits for Resume, and comes again.
func testQuiesceLease(t *testing.T, h Harness) {
	needQuiesce(t, h)
	const lease = 400 * time.Millisecond
	ps := newPubSub(t, h, Config{Lease: lease})
	tp := open(t, ps, "quiesce-lease")
	enqueue(t, tp, "a")
	stale := dequeue(t, tp)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := admin.Quiesce(ctx, ps); err != nil {
		t.Fatalf("Quiesce with a delivery whose lease runs out: %v", err)
	}
	expectNone(t, tp, 2*lease)
	resumeConsumers(t, ps)
	fresh := dequeue(t, tp)
	if fresh.ID() != stale.ID() {
		t.Fatalf("after Resume got message %s, want %s again", fresh.ID(), stale.ID())
	}
	wantErr(t, "Ack of the stale delivery", stale.Ack(context.Background()), pubsub.ErrLeaseExpired)
	ack(t, fresh)
}

// testQuiesceClose: Close of a quiesced PubSub returns the Dequeue calls
// waiting at its gate and a Quiesce waiting for a delivery, with
// ErrClosed; Quiesce and Resume after Close are ErrClosed too.
func testQuiesceClose(t *testing.T, h Harness) {
	needQuiesce(t, h)
	ps := newPubSub(t, h, Config{})
	if _, ok := ps.(io.Closer); !ok {
		t.Skipf("the backend (%T) has no Close", ps)
	}
	tp := open(t, ps, "quiesce-close")
	enqueue(t, tp, "a")
	dequeue(t, tp) // in hand, never settled: Quiesce waits for it
	done := quiesceAsync(context.Background(), ps)
	waitQuiesced(t, ps)
	blocked := make(chan error, 1)
	go func() {
		_, err := tp.Dequeue(context.Background())
		blocked <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it wait; the assertions hold either way
	closeBackend(t, ps)
	wantErr(t, "Quiesce waiting when the PubSub closed", wantReturned(t, done, "when the PubSub closed"), pubsub.ErrClosed)
	select {
	case err := <-blocked:
		wantErr(t, "Dequeue waiting at the gate when the PubSub closed", err, pubsub.ErrClosed)
	case <-time.After(patience):
		t.Fatal("Close did not return a Dequeue waiting at the gate")
	}
	ctx := context.Background()
	wantErr(t, "Quiesce after Close", admin.Quiesce(ctx, ps), pubsub.ErrClosed)
	wantErr(t, "ResumeConsumers after Close", admin.ResumeConsumers(ctx, ps), pubsub.ErrClosed)
}

// wantQuiesceUnsupported checks that a backend without the gate says so.
func wantQuiesceUnsupported(t *testing.T, ps pubsub.PubSub) {
	t.Helper()
	err := admin.Quiesce(context.Background(), ps)
	if !errors.Is(err, pubsub.ErrUnsupported) {
		t.Errorf("Quiesce on a backend that does not declare it = %v, want ErrUnsupported", err)
	}
}
