// Package batch groups work that many goroutines ask for at once into
// batches, so that one statement, one round trip and one commit serve many
// calls. A Queue is handled by up to Lanes goroutines at once (each a loop
// of its owner's service.Group, started while items wait and ended when
// none does), each batch holding up to Max items in the order they were
// added:
//
//	q := batch.New(group, batch.Options[*req]{Lanes: 2, Max: 512, Handle: writeAll})
//	t, _ := q.Add(r, 0)
//	select {
//	case <-r.done:
//	case <-ctx.Done():
//		if q.Cancel(t) { return ctx.Err() } // no lane took it: nothing happened
//		<-r.done                            // taken: its outcome is awaited
//	}
//
// Wait returns once every item added before it is handled (a flush).
package batch

import (
	"context"
	"sync"

	"github.com/conveyorgo/conveyor/internal/service"
)

// Options configures a Queue.
type Options[T any] struct {
	// Lanes is how many batches may be handled at once (at least 1).
	Lanes int
	// Max is the most items in one batch (at least 1).
	Max int
	// Handle handles one batch; the items are in the order added.
	Handle func(batch []T)
	// Pace, if set, is called by a lane before it takes each batch, so that
	// items added meanwhile join it; it returns early when stop is closed.
	Pace func(stop <-chan struct{})
}

// Queue is a batching queue. Its methods are safe for concurrent use.
type Queue[T any] struct {
	opts  Options[T]
	group *service.Group

	mu       sync.Mutex
	items    []item[T]
	running  int             // lanes started and not ended
	added    uint64          // the ticket of the next item added
	taken    uint64          // every ticket below it is taken by a lane
	inflight map[uint64]bool // the first ticket of each batch being handled
	handled  chan struct{}   // closed (and replaced) when a batch is handled
}

type item[T any] struct {
	v        T
	canceled bool
}

// Ticket names one item added, for Cancel.
type Ticket uint64

// New returns a Queue whose lanes run in group.
func New[T any](group *service.Group, opts Options[T]) *Queue[T] {
	opts.Lanes, opts.Max = max(opts.Lanes, 1), max(opts.Max, 1)
	return &Queue[T]{opts: opts, group: group, inflight: make(map[uint64]bool), handled: make(chan struct{})}
}

// Add queues v for the next batch, unless limit > 0 and limit items wait
// already: then it reports false and queues nothing.
func (q *Queue[T]) Add(v T, limit int) (Ticket, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if limit > 0 && len(q.items) >= limit {
		return 0, false
	}
	t := Ticket(q.added)
	q.items = append(q.items, item[T]{v: v})
	q.added++
	if q.running < q.opts.Lanes {
		q.running++
		if !q.group.Go(q.lane) {
			q.running-- // the owner stopped: nothing handles it any more
		}
	}
	return t, true
}

// Cancel takes back the item of t if no lane has taken it yet, and reports
// whether it did.
func (q *Queue[T]) Cancel(t Ticket) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if uint64(t) < q.taken {
		return false
	}
	it := &q.items[uint64(t)-q.taken]
	if it.canceled {
		return false
	}
	it.canceled = true
	return true
}

// Wait returns once every item added before the call is handled, or when
// ctx ends.
func (q *Queue[T]) Wait(ctx context.Context) error {
	q.mu.Lock()
	target := q.added
	q.mu.Unlock()
	for {
		q.mu.Lock()
		done := q.taken
		for first := range q.inflight {
			done = min(done, first)
		}
		ch := q.handled
		q.mu.Unlock()
		if done >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lane handles batches while items wait.
func (q *Queue[T]) lane(stop <-chan struct{}) {
	batch := make([]T, 0, q.opts.Max)
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.running--
			q.mu.Unlock()
			return
		}
		if q.opts.Pace != nil {
			q.mu.Unlock()
			q.opts.Pace(stop) // items added meanwhile join the batch
			q.mu.Lock()
		}
		var first uint64
		batch, first = q.takeLocked(batch[:0])
		q.mu.Unlock()

		if len(batch) > 0 {
			q.opts.Handle(batch)
		}

		q.mu.Lock()
		delete(q.inflight, first)
		close(q.handled)
		q.handled = make(chan struct{})
		q.mu.Unlock()
	}
}

// takeLocked moves up to Max waiting items, less the canceled ones, onto
// batch, marks them in flight, and returns the first ticket taken. Called
// with mu held.
func (q *Queue[T]) takeLocked(batch []T) ([]T, uint64) {
	n := min(len(q.items), q.opts.Max)
	for _, it := range q.items[:n] {
		if !it.canceled {
			batch = append(batch, it.v)
		}
	}
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	first := q.taken
	q.taken += uint64(n)
	q.inflight[first] = true
	return batch, first
}
