// Package failhook hands failures (pubsub.Failure) to a hook without
// making the goroutine that reports them wait: through a queue of
// pubsub.FailureQueueLen, read by one goroutine, started at the first
// failure and stopped by Close; a failure that finds the queue full is
// dropped and counted in the next one the hook gets. Without a hook each
// failure is handed to the log line the reporter gives, at once.
package failhook

import (
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Reporter reports the failures of one owner (a PubSub, a relay's Run, a
// Service). Its zero value is not ready: use New. A nil *Reporter only
// logs.
type Reporter struct {
	hook func(pubsub.Failure)

	mu      sync.Mutex
	queue   chan pubsub.Failure
	closed  bool
	dropped int64
	last    pubsub.Failure // the last one dropped
	done    chan struct{}
}

// New returns a Reporter handing failures to hook; a nil hook means each
// failure is logged by the func Report is given.
func New(hook func(pubsub.Failure)) *Reporter {
	return &Reporter{hook: hook}
}

// Report hands f to the hook, setting f.Time if it is zero, or, without a
// hook, calls log. It never waits for the hook. After Close, failures go
// to log.
func (r *Reporter) Report(f pubsub.Failure, log func()) {
	if r == nil || r.hook == nil {
		if log != nil {
			log()
		}
		return
	}
	if f.Time.IsZero() {
		f.Time = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		if log != nil {
			log()
		}
		return
	}
	if r.queue == nil {
		r.queue = make(chan pubsub.Failure, pubsub.FailureQueueLen)
		r.done = make(chan struct{})
		go r.run(r.queue, r.done)
	}
	f.Dropped = r.dropped
	select {
	case r.queue <- f:
		r.dropped = 0
	default:
		r.dropped++
		r.last = f
	}
}

func (r *Reporter) run(queue <-chan pubsub.Failure, done chan<- struct{}) {
	defer close(done)
	for f := range queue {
		r.hook(f)
	}
}

// Close hands the hook what is waiting, and the last failure dropped
// (counting the others), and waits for it; later failures go to their log
// line. Close is idempotent.
func (r *Reporter) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	queue, done, wasClosed := r.queue, r.done, r.closed
	r.closed = true
	last, dropped := r.last, r.dropped
	r.dropped = 0
	r.mu.Unlock()
	if wasClosed || queue == nil {
		if done != nil {
			<-done
		}
		return
	}
	if dropped > 0 { // no Report sends any more: wait for room
		last.Dropped = dropped - 1
		queue <- last
	}
	close(queue)
	<-done
}
