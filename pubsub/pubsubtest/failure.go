package pubsubtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

var failureCases = []testCase{
	{"FailureHookReportsDead", testFailureHookDead},
}

// FailureLog records the failures a hook is handed (pubsub.Failure): give
// its Hook as a backend's, a relay's or a Service's OnFailure.
type FailureLog struct {
	mu   sync.Mutex
	all  []pubsub.Failure
	more chan struct{} // closed and replaced at each failure
}

// Hook records f.
func (l *FailureLog) Hook(f pubsub.Failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, f)
	if l.more != nil {
		close(l.more)
		l.more = nil
	}
}

// All returns the failures recorded so far, in order.
func (l *FailureLog) All() []pubsub.Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]pubsub.Failure(nil), l.all...)
}

// Wait returns the first failure recorded that match accepts, waiting
// for it until ctx ends (then it returns ctx's error).
func (l *FailureLog) Wait(ctx context.Context, match func(pubsub.Failure) bool) (pubsub.Failure, error) {
	for {
		l.mu.Lock()
		for _, f := range l.all {
			if match(f) {
				l.mu.Unlock()
				return f, nil
			}
		}
		if l.more == nil {
			l.more = make(chan struct{})
		}
		more := l.more
		l.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return pubsub.Failure{}, ctx.Err()
		}
	}
}

// testFailureHookDead makes three messages dead, one for each cause, and
// checks that the hook hears of each with its fields.
func testFailureHookDead(t *testing.T, h Harness) {
	need(t, h.Abilities.FailureHook, "a failure hook (Config.OnFailure)")
	need(t, h.Abilities.Reject && h.Abilities.FailReasons, "Fail and Reject")
	var log FailureLog
	// The first two deaths are settled in hand: a lease that cannot run
	// out on a loaded machine. The third is the lease's own.
	cfg := Config{Lease: time.Minute, Retry: pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: 10 * time.Millisecond, Jitter: -1}, OnFailure: log.Hook}
	ps := newPubSub(t, h, cfg)
	tp := open(t, ps, "failures")
	ctx := context.Background()
	reason := errors.New("the handler gave up")

	enqueue(t, tp, "fails twice")
	m := dequeue(t, tp)
	exhausted := m.ID()
	if err := pubsub.Fail(ctx, m, reason); err != nil {
		t.Fatal(err)
	}
	m = dequeue(t, tp)
	if err := pubsub.Fail(ctx, m, reason); err != nil {
		t.Fatal(err)
	}

	enqueue(t, tp, "rejected")
	m = dequeue(t, tp)
	rejected := m.ID()
	if err := pubsub.Reject(ctx, m, reason); err != nil {
		t.Fatal(err)
	}

	// Closed first: a consumer-group member of it would else own
	// partitions the next one waits on.
	_ = tp.Close()
	closeBackend(t, ps)
	cfg.Lease = 500 * time.Millisecond
	tp = open(t, newPubSub(t, h, cfg), "failures")
	enqueue(t, tp, "crashes its consumer twice")
	m = dequeue(t, tp)
	expired := m.ID()
	_ = dequeue(t, tp) // after the first lease ran out
	// The second lease runs out too; a backend may find it only when it
	// looks for a message to hand out.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		if m, err := tp.Dequeue(wctx); err == nil {
			_ = m.Ack(context.Background())
		}
	}()

	for _, want := range []struct {
		cause pubsub.DeadCause
		id    string
	}{{pubsub.AttemptsExhausted, exhausted}, {pubsub.Rejected, rejected}, {pubsub.LeaseExpired, expired}} {
		f, err := log.Wait(wctx, func(f pubsub.Failure) bool { return f.Kind == pubsub.Dead && f.Cause == want.cause })
		if err != nil {
			t.Fatalf("no Dead failure (%s) reported; the hook had %v", want.cause, log.All())
		}
		wantErrText := reason.Error()
		if want.cause == pubsub.LeaseExpired {
			wantErrText = ""
		}
		switch {
		case f.Topic != "failures" || f.Subscription != pubsub.DefaultSubscription:
			t.Errorf("%s reported on topic %q, subscription %q; want failures, %s", want.cause, f.Topic, f.Subscription, pubsub.DefaultSubscription)
		case f.MessageID != want.id:
			t.Errorf("%s reported for message %q, want %q", want.cause, f.MessageID, want.id)
		case h.Abilities.Attempts && want.cause != pubsub.Rejected && f.Attempt != 2:
			t.Errorf("%s reported at attempt %d, want 2", want.cause, f.Attempt)
		case want.cause == pubsub.Rejected && h.Abilities.Attempts && f.Attempt != 1:
			t.Errorf("%s reported at attempt %d, want 1", want.cause, f.Attempt)
		case f.Err == nil || wantErrText != "" && f.Err.Error() != wantErrText:
			t.Errorf("%s reported with error %v, want the reason kept (%q)", want.cause, f.Err, wantErrText)
		case f.Time.IsZero():
			t.Errorf("%s reported without its time", want.cause)
		}
	}
	if n := len(log.All()); n != 3 {
		t.Errorf("the hook had %d failures, want 3: %v", n, log.All())
	}
}
