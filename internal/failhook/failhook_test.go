package failhook

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/pubsub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBlockedHook: a hook that blocks never makes Report wait; what does
// not fit in the queue is dropped and counted in the next failure the
// hook gets; Close waits for the hook to have had what was queued.
func TestBlockedHook(t *testing.T) {
	release := make(chan struct{})
	got := make(chan pubsub.Failure, 2*pubsub.FailureQueueLen)
	r := New(func(f pubsub.Failure) {
		<-release
		got <- f
	})
	const extra = 10
	// One failure in the hook, FailureQueueLen waiting, extra dropped.
	for range 1 + pubsub.FailureQueueLen + extra {
		r.Report(pubsub.Failure{Kind: pubsub.FetchRetried}, nil)
	}
	close(release)
	// The hook is still behind: the next one may be queued or dropped.
	r.Report(pubsub.Failure{Kind: pubsub.Dead}, nil)
	r.Close()
	close(got)
	var n int
	var dropped int64
	for f := range got {
		n++
		dropped += f.Dropped
	}
	if int64(n)+dropped != 1+pubsub.FailureQueueLen+extra+1 || dropped < extra {
		t.Fatalf("the hook had %d failures and was told of %d dropped; want %d in all, at least %d dropped",
			n, dropped, 1+pubsub.FailureQueueLen+extra+1, extra)
	}
}

// TestNoHook: without a hook, each failure goes to its log line at once.
func TestNoHook(t *testing.T) {
	logged := 0
	var r *Reporter
	r.Report(pubsub.Failure{}, func() { logged++ })
	New(nil).Report(pubsub.Failure{}, func() { logged++ })
	if logged != 2 {
		t.Fatalf("logged %d, want 2", logged)
	}
}
