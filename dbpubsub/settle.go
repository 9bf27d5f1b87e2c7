package dbpubsub

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/conveyorgo/conveyor/pubsub"
)

// settlers is how many settle statements may be in flight at once: while
// one waits for its commit, the next group is sent, and PostgreSQL flushes
// concurrent commits together. (Measured on a loaded 2-core machine, 1, 2
// and 4 were within the noise of each other.)
const settlers = 2

// maxSettleBatch is the most settles grouped into one statement.
const maxSettleBatch = 512

// maxQueuedAcks bounds the asynchronous acks waiting for a statement
// (Options.AsyncAck); an Ack beyond it waits for its commit, which slows
// the consumers down to the pace of the settlers.
const maxQueuedAcks = 8 * maxSettleBatch

// settleReq asks the settler to change one delivered row.
type settleReq struct {
	id, token int64
	status    string
	delay     int64 // µs, for status pending
	reason    string
	done      chan error // nil: an asynchronous ack, nobody waits
	topic     string     // for the log of a failed asynchronous ack
}

// settle runs r in the next grouped statement and returns once it is
// committed: nil, an error wrapping pubsub.ErrLeaseExpired when the
// delivery no longer holds the row, or the statement's error. If ctx ends
// before r is handed to a statement, it returns ctx's error and nothing was
// changed; once handed over, r's outcome is awaited (see PubSub.write).
func (ps *PubSub) settle(ctx context.Context, r *settleReq) error {
	if err := ps.begin(); err != nil {
		return err
	}
	defer ps.end()
	r.done = make(chan error, 1)
	select {
	case ps.settleCh <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// ackQueue holds the asynchronous acks (Options.AsyncAck) until a settler
// takes them, and tells Flush when the acks queued before it are written.
// Acks are numbered in queue order; a settler takes a run of consecutive
// numbers, so every ack numbered below the smallest one in flight or
// queued is written.
type ackQueue struct {
	mu       sync.Mutex
	pending  []*settleReq
	next     uint64          // the number of the next ack queued
	taken    uint64          // acks numbered below it are taken by a settler
	inflight map[uint64]bool // the first numbers of the runs being written
	written  chan struct{}   // closed (and replaced) when a run is written
	kick     chan struct{}   // cap 1: acks were queued
}

func newAckQueue() *ackQueue {
	return &ackQueue{
		inflight: make(map[uint64]bool),
		written:  make(chan struct{}),
		kick:     make(chan struct{}, 1),
	}
}

// push queues r unless the queue is full.
func (q *ackQueue) push(r *settleReq) bool {
	q.mu.Lock()
	if len(q.pending) >= maxQueuedAcks {
		q.mu.Unlock()
		return false
	}
	q.pending = append(q.pending, r)
	q.next++
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	return true
}

// take moves up to n queued acks onto batch and returns the number of the
// first one taken (for done).
func (q *ackQueue) take(batch []*settleReq, n int) ([]*settleReq, uint64, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := min(n, len(q.pending))
	if k == 0 {
		return batch, 0, 0
	}
	batch = append(batch, q.pending[:k]...)
	clear(q.pending[:k])
	q.pending = q.pending[k:]
	if len(q.pending) == 0 {
		q.pending = nil // let the backing array go
	} else {
		select { // more for the other settler, or the next round
		case q.kick <- struct{}{}:
		default:
		}
	}
	first := q.taken
	q.taken += uint64(k)
	q.inflight[first] = true
	return batch, first, k
}

// done marks the run starting at first written (or failed: logged).
func (q *ackQueue) done(first uint64) {
	q.mu.Lock()
	delete(q.inflight, first)
	close(q.written)
	q.written = make(chan struct{})
	q.mu.Unlock()
}

// writtenBelow returns the number below which every ack is written, and a
// channel closed when that may have changed.
func (q *ackQueue) writtenBelow() (uint64, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.taken
	for first := range q.inflight {
		w = min(w, first)
	}
	return w, q.written
}

// queued returns the number of the next ack to be queued.
func (q *ackQueue) queued() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.next
}

// ackAsync queues r as an asynchronous ack and reports whether it was
// queued (false: the PubSub is closed or the queue is full). The ack holds
// a PubSub operation until it is written, so Close writes it first.
func (ps *PubSub) ackAsync(r *settleReq) bool {
	if err := ps.begin(); err != nil {
		return false
	}
	if !ps.acks.push(r) {
		ps.end()
		return false
	}
	return true
}

// Flush returns once the acks that Options.AsyncAck queued before the call
// are written to the database (or failed, which is logged), or when ctx
// ends. Without AsyncAck there is nothing to wait for. Stats, ListDead and
// the other reads of a topic flush first, so they see this PubSub's acks.
func (ps *PubSub) Flush(ctx context.Context) error {
	target := ps.acks.queued()
	for {
		w, ch := ps.acks.writtenBelow()
		if w >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settleLoop groups the settles that arrive while a statement runs into
// the next statement: one round trip and one commit for many acks and
// nacks, without waiting when there is only one.
func (ps *PubSub) settleLoop() {
	defer ps.settler.Done()
	batch := make([]*settleReq, 0, maxSettleBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-ps.settleCh:
			batch = append(batch, r)
		case <-ps.acks.kick:
		case <-ps.settleStop:
			return
		}
	more:
		for len(batch) < maxSettleBatch {
			select {
			case r := <-ps.settleCh:
				batch = append(batch, r)
			default:
				break more
			}
		}
		var first uint64
		var async int
		batch, first, async = ps.acks.take(batch, maxSettleBatch-len(batch))
		if len(batch) > 0 {
			ps.execSettle(batch)
		}
		if async > 0 {
			ps.acks.done(first)
			for range async {
				ps.end()
			}
		}
	}
}

type idToken struct{ id, token int64 }

func (ps *PubSub) execSettle(batch []*settleReq) {
	// Lock rows in id order, so that two statements never wait for each
	// other's rows in opposite orders.
	slices.SortFunc(batch, func(a, b *settleReq) int { return cmp.Compare(a.id, b.id) })
	n := len(batch)
	ids, tokens, delays := make([]int64, n), make([]int64, n), make([]int64, n)
	statuses, reasons := make([]string, n), make([]string, n)
	for i, r := range batch {
		ids[i], tokens[i], statuses[i], delays[i], reasons[i] = r.id, r.token, r.status, r.delay, r.reason
	}
	done := make(map[idToken]bool, n)
	ctx, cancel := context.WithTimeout(ps.ctx, ps.opts.StatementTimeout)
	defer cancel()
	err := func() error {
		rows, err := ps.sqldb.QueryContext(ctx, ps.stmts.settle, ids, tokens, statuses, delays, reasons)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k idToken
			if err := rows.Scan(&k.id, &k.token); err != nil {
				return err
			}
			done[k] = true
		}
		return rows.Err()
	}()
	for _, r := range batch {
		var rerr error
		switch {
		case err != nil:
			rerr = err
		case done[idToken{r.id, r.token}]:
		default:
			rerr = fmt.Errorf("%w: the row is no longer leased to this delivery", pubsub.ErrLeaseExpired)
		}
		if r.done != nil {
			r.done <- rerr
		} else if rerr != nil {
			ps.opts.Logger.Warn("dbpubsub: asynchronous ack not written; the message is delivered again when its lease runs out",
				slog.String("topic", r.topic), slog.Int64("id", r.id), slog.Any("error", rerr))
		}
	}
}
