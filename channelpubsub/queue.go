package channelpubsub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// queue is one subscription of a topic (or the default subscription's
// copies of a topic with none, see topicState), shared by all its handles:
// its copies, their leases, retries, dead letters and stats, its inbox.
type queue struct {
	ps    *store
	topic string
	sub   string
	ch    chan *entry // ready messages, in order

	// subscribed says the queue is one of its topic's subscriptions: a
	// named one always, the default once consumed from or declared.
	subscribed atomic.Bool
	// retry is the subscription's own retry policy, set when Subscribe
	// made it; nil means the store's (Env.Defaults).
	retry atomic.Pointer[pubsub.RetryPolicy]
	// gone is closed when the subscription is deleted, its copies with it.
	gone   chan struct{}
	isGone atomic.Bool

	batchSlot chan struct{} // held by the batch going in
	batchRest atomic.Int64  // items of that batch still waiting for room

	// live links the entries that are ready (in ch or waiting for room:
	// a channel cannot be looked into) or leased to a consumer, for Peek,
	// Cancel, Stats and the expiry of leases; sharded by ID so that
	// concurrent consumers rarely meet on one lock. An entry is linked
	// once when it becomes ready and unlinked once when it leaves both
	// states, so a delivery costs one link and one unlink.
	live [liveShards]liveShard

	mu        sync.Mutex
	scheduled map[*entry]struct{} // delayed or backing off
	dead      []*entry            // oldest death first
	keys      map[string]*entry   // unique keys of the messages kept
	finished  []finishedKey       // keys of acked messages, oldest first, kept for Options.Retention

	inbox inbox
	pause pauseState
	acks  ackRing // by the second, for AckedSince (ackcount.go)
}

const liveShards = 16

// liveShard is a doubly linked list of live entries (through entry.prev
// and entry.next): linking and unlinking take no allocation. Its counts
// follow the entries' states, each changed with the entry's mu held.
type liveShard struct {
	mu         sync.Mutex
	head       entry        // sentinel
	ready      atomic.Int64 // entries ready
	processing atomic.Int64 // entries leased
	acks       ackTally     // the acks of the latest second, not yet in the queue's ring
}

// shard returns the live shard of e.
func (q *queue) shard(e *entry) *liveShard { return &q.live[e.id%liveShards] }

// retryPolicy returns the subscription's retry policy.
func (q *queue) retryPolicy() pubsub.RetryPolicy {
	if p := q.retry.Load(); p != nil {
		return *p
	}
	return q.ps.opts.Retry
}

func newQueue(ps *store, topic, sub string) *queue {
	q := &queue{
		ps:        ps,
		topic:     topic,
		sub:       sub,
		ch:        make(chan *entry, ps.opts.Capacity),
		gone:      make(chan struct{}),
		batchSlot: make(chan struct{}, 1),
		scheduled: make(map[*entry]struct{}),
	}
	q.pause.init()
	for i := range q.live {
		h := &q.live[i].head
		h.prev, h.next = h, h
	}
	return q
}

// newEntry returns a new entry holding a copy of data and header h.
func (q *queue) newEntry(data []byte, h pubsub.Header) *entry {
	return q.keepEntry(append([]byte{}, data...), h)
}

// keepEntry returns a new entry holding data itself, which nobody else
// writes, and header h. h is shared, never written: pubsub.WithHeader
// made it, and every copy of a publish carries the same one.
func (q *queue) keepEntry(data []byte, h pubsub.Header) *entry {
	if data == nil {
		data = []byte{} // as a copy of nil is
	}
	return &entry{q: q, id: q.ps.nextID.Add(1), created: q.ps.clock.Load(),
		first: driver.Slot{Delivery: driver.Delivery{Data: data, Header: h}}}
}

// push makes e ready: into the channel if there is room, else a goroutine
// owned by the store waits for room (redeliveries must never block the
// timer or the consumer that caused them).
func (q *queue) push(e *entry) {
	q.makeReady(e)
	select {
	case q.ch <- e:
		return
	default:
	}
	if q.ps.isClosed() || q.isGone.Load() {
		return
	}
	q.ps.wg.Add(1)
	go func() {
		defer q.ps.wg.Done()
		select {
		case q.ch <- e:
		case <-q.ps.closed:
		case <-q.gone:
		}
	}()
}

// pushAll makes es ready in order: what fits goes into the channel now, the
// rest waits for room in one goroutine owned by the store. It releases
// the batch slot when every entry is in.
func (q *queue) pushAll(es []*entry) {
	for _, e := range es {
		q.makeReady(e)
	}
	for i, e := range es {
		select {
		case q.ch <- e:
			continue
		default:
		}
		rest := es[i:]
		q.batchRest.Add(int64(len(rest)))
		q.ps.wg.Add(1)
		go func() {
			defer q.ps.wg.Done()
			defer func() { <-q.batchSlot }()
			for _, e := range rest {
				select {
				case q.ch <- e:
					q.batchRest.Add(-1)
				case <-q.ps.closed:
					return
				case <-q.gone:
					return
				}
			}
		}()
		return
	}
	<-q.batchSlot
}

// schedule makes e ready after delay. Called with e.mu held.
func (q *queue) schedule(e *entry, delay time.Duration) {
	e.state = stScheduled
	c := e.coldPart()
	c.due = time.Now().Add(delay)
	q.mu.Lock()
	q.scheduled[e] = struct{}{}
	q.mu.Unlock()
	if c.timer == nil {
		c.timer = time.AfterFunc(delay, e.fire)
	} else {
		c.timer.Reset(delay)
	}
}

// stopTimers stops the timers of every scheduled message; the store is
// closed, so none is armed again.
func (q *queue) stopTimers() {
	q.mu.Lock()
	es := make([]*entry, 0, len(q.scheduled))
	for e := range q.scheduled {
		es = append(es, e)
	}
	q.mu.Unlock()
	for _, e := range es { // e.mu is taken before q.mu, never after
		e.stopTimer()
	}
}

// errDuplicate says a unique key is taken; EnqueueUnique turns it into false.
var errDuplicate = errors.New("duplicate key")

// errStopped says the handle or the store closed while a call waited; the
// handle reports its own closed error.
var errStopped = errors.New("stopped")

// errGone says the queue's subscription was deleted while a call waited.
var errGone = errors.New("subscription deleted")

// enqueue adds data (itself if owned, else a copy) with header h, ready
// at at (zero: now), waiting for room while the queue is full. A non-empty key is
// unique among the messages the queue keeps: a message under a taken key
// is not added and errDuplicate is returned. A copy for a subscription
// deleted meanwhile goes with it.
func (q *queue) enqueue(ctx context.Context, data []byte, h pubsub.Header, owned bool, at time.Time, key string, handleClosed <-chan struct{}) (err error) {
	if q.batchRest.Load() > 0 {
		// A batch is still going in: wait behind it, so that a producer's
		// messages keep their order.
		select {
		case q.batchSlot <- struct{}{}:
			<-q.batchSlot
		case <-ctx.Done():
			return fmt.Errorf("waiting behind a batch until ctx ended: %w", ctx.Err())
		case <-handleClosed:
			return errStopped
		case <-q.ps.closed:
			return errStopped
		case <-q.gone:
			return nil
		}
	}
	var e *entry
	if owned {
		e = q.keepEntry(data, h)
	} else {
		e = q.newEntry(data, h)
	}
	if key != "" {
		if !q.claimKey(key, e) {
			return errDuplicate
		}
		defer func() {
			if err != nil {
				q.releaseKey(e)
			}
		}()
	}
	if !at.IsZero() {
		if delay := time.Until(at); delay > 0 {
			e.mu.Lock()
			q.schedule(e, delay)
			e.mu.Unlock()
			return nil
		}
	}
	q.makeReady(e) // before it can be dequeued
	select {
	case q.ch <- e:
		return nil
	default:
	}
	select {
	case q.ch <- e:
		return nil
	case <-ctx.Done():
		q.dropReady(e) // never added
		return fmt.Errorf("full (Options.Capacity %d) until ctx ended: %w", cap(q.ch), ctx.Err())
	case <-handleClosed:
		q.dropReady(e)
		return errStopped
	case <-q.ps.closed:
		q.dropReady(e)
		return errStopped
	case <-q.gone:
		return nil
	}
}

// finishedKey is the unique key of an acked message, taken until
// Options.Retention after its ack.
type finishedKey struct {
	e     *entry
	until time.Time
}

func (q *queue) claimKey(key string, e *entry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pruneKeys(time.Now())
	if _, taken := q.keys[key]; taken {
		return false
	}
	if q.keys == nil {
		q.keys = make(map[string]*entry)
	}
	q.keys[key] = e
	e.coldPart().key = key // e is not shared yet
	return true
}

// finishKey keeps e's unique key, if it has one, for Options.Retention
// after its ack, as a finished row keeps it on dbpubsub.
func (q *queue) finishKey(e *entry) {
	if e.key() == "" {
		return
	}
	now := time.Now()
	q.mu.Lock()
	q.pruneKeys(now)
	if q.keys[e.key()] == e {
		q.finished = append(q.finished, finishedKey{e: e, until: now.Add(q.ps.opts.Retention)})
	}
	q.mu.Unlock()
}

// pruneKeys frees the keys of the messages acked longer than
// Options.Retention ago. Called with q.mu held.
func (q *queue) pruneKeys(now time.Time) {
	n := 0
	for n < len(q.finished) && !now.Before(q.finished[n].until) {
		if f := q.finished[n]; q.keys[f.e.key()] == f.e {
			delete(q.keys, f.e.key())
		}
		n++
	}
	if n > 0 {
		clear(q.finished[:n])
		q.finished = q.finished[n:]
	}
}

// releaseKey frees e's unique key, if it has one: e is purged or was never
// added.
func (q *queue) releaseKey(e *entry) {
	key := e.key()
	if key == "" {
		return
	}
	q.mu.Lock()
	if q.keys[key] == e {
		delete(q.keys, key)
	}
	q.mu.Unlock()
}

// dequeue delivers the next ready message. It returns errStopped when the
// handle or the store closes, errGone when the subscription is deleted.
func (q *queue) dequeue(ctx context.Context, handleClosed <-chan struct{}) (*driver.Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // an ended ctx gets no message, even a ready one
	}
	for {
		paused := q.pause.on.Load()
		var e *entry
		if !paused {
			e = q.pause.takeHeld()
		}
		if e == nil {
			// Wait for a message or, while paused, for the resume: one
			// select either way, the message channel left out (nil)
			// while paused. A message taken as a pause begins goes out
			// first on resume.
			in, wake := q.ch, (<-chan struct{})(*q.pause.pausing.Load())
			if paused {
				if wake = q.pause.waitFor(); wake == nil {
					continue // resumed meanwhile
				}
				in = nil
			}
			select {
			case e = <-in:
			default:
				select {
				case e = <-in:
				case <-wake:
					continue
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-handleClosed:
					return nil, errStopped
				case <-q.ps.closed:
					return nil, errStopped
				case <-q.gone:
					return nil, errGone
				}
			}
			if q.pause.on.Load() {
				q.pause.hold(e) // paused meanwhile: it goes out first on resume
				continue
			}
		}
		if q.isGone.Load() {
			return nil, errGone // the copy went with its subscription
		}
		if s := e.deliver(); s != nil {
			return s, nil
		}
		// e was cancelled: take the next.
	}
}

// expireLeases hands out again, or buries, every message whose lease ended
// before now.
func (q *queue) expireLeases(now int64) {
	var expired []delivery
	for i := range q.live {
		sh := &q.live[i]
		sh.mu.Lock()
		for e := sh.head.next; e != &sh.head; e = e.next {
			if e.leased.Load() != 0 && e.leaseUntil.Load() < now {
				expired = append(expired, delivery{e, e.leased.Load()})
			}
		}
		sh.mu.Unlock()
	}
	for _, d := range expired {
		d.e.expire(d.token, now)
	}
}

// delivery names one delivery of an entry.
type delivery struct {
	e     *entry
	token uint64
}

// drop ends the queue: its subscription is deleted, and its copies with
// it. Calls waiting on it return, its scheduled copies never come due,
// and its deliveries in hand fail to settle (message.check).
func (q *queue) drop() {
	q.isGone.Store(true)
	close(q.gone)
	q.stopTimers()
}

// makeReady counts e, which becomes ready, and links it unless it is
// linked (an expired lease's entry stays linked). Called with e.mu held,
// or before e is shared.
func (q *queue) makeReady(e *entry) {
	sh := q.shard(e)
	sh.mu.Lock()
	if e.prev == nil {
		e.prev, e.next = sh.head.prev, &sh.head
		e.prev.next, sh.head.prev = e, e
	}
	sh.mu.Unlock()
	sh.ready.Add(1)
}

// unlink takes e out of its shard; acked counts an ack (AckedSince).
func (q *queue) unlink(sh *liveShard, e *entry, acked bool) {
	sh.mu.Lock()
	if e.prev != nil {
		e.prev.next, e.next.prev = e.next, e.prev
		e.prev, e.next = nil, nil
	}
	if acked {
		q.countAck(sh, q.ps.clock.Load()/int64(time.Second))
	}
	sh.mu.Unlock()
}

// dropReady unlinks e, ready and now never to be delivered (cancelled, or
// its enqueue gave up). Called with e.mu held, or before e is shared.
func (q *queue) dropReady(e *entry) {
	sh := q.shard(e)
	q.unlink(sh, e, false)
	sh.ready.Add(-1)
}

// countLeased counts e, ready, as leased; it stays linked. Called with
// e.mu held.
func (q *queue) countLeased(e *entry) {
	sh := q.shard(e)
	sh.ready.Add(-1)
	sh.processing.Add(1)
}

// endLease ends e's lease: e no longer counts as leased, and, unless it
// is to be ready again (again: its lease ran out), it is unlinked, its ack
// counted if acked. Called with e.mu held.
func (q *queue) endLease(e *entry, acked, again bool) {
	e.leased.Store(0)
	sh := q.shard(e)
	if !again {
		q.unlink(sh, e, acked)
	}
	sh.processing.Add(-1)
}

// count sums the live shards' counts.
func (q *queue) count() (ready, processing int64) {
	for i := range q.live {
		ready += q.live[i].ready.Load()
		processing += q.live[i].processing.Load()
	}
	return ready, processing
}

// bury records e as dead, keeping reason. Called with e.mu held, e no
// longer in flight.
func (q *queue) bury(e *entry, reason string) {
	e.state = stDead
	c := e.coldPart()
	c.lastErr = reason
	c.diedAt = time.Now()
	q.mu.Lock()
	q.dead = append(q.dead, e)
	q.mu.Unlock()
}

// pruneDead forgets the dead messages that died before cutoff, and frees
// their unique keys. q.dead is oldest death first.
func (q *queue) pruneDead(cutoff time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(q.dead) && q.dead[n].cold.diedAt.Before(cutoff) {
		if e := q.dead[n]; e.key() != "" && q.keys[e.key()] == e {
			delete(q.keys, e.key())
		}
		n++
	}
	if n > 0 {
		clear(q.dead[:n])
		q.dead = q.dead[n:]
	}
}

func (q *queue) listDead(limit int) []admin.DeadMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.dead)
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]admin.DeadMessage, 0, n)
	for _, e := range q.dead[:n] {
		out = append(out, admin.DeadMessage{
			ID:        e.ID(),
			Data:      append([]byte{}, e.data()...),
			Attempts:  int(e.attempt),
			LastError: e.cold.lastErr,
			DiedAt:    e.cold.diedAt,
			Header:    maps.Clone(e.header()),
		})
	}
	return out
}

// takeDead removes the dead entries that match and returns them.
func (q *queue) takeDead(match func(*entry) bool) []*entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	var taken []*entry
	kept := q.dead[:0]
	for _, e := range q.dead {
		if match(e) {
			taken = append(taken, e)
		} else {
			kept = append(kept, e)
		}
	}
	clear(q.dead[len(kept):])
	q.dead = kept
	return taken
}

func (q *queue) requeue(es []*entry) {
	for _, e := range es {
		e.mu.Lock()
		e.attempt = 0
		if e.cold != nil {
			e.cold.lastErr = ""
		}
		e.state = stReady
		e.mu.Unlock()
		q.push(e)
	}
}

func (q *queue) stats() admin.Stats {
	ready, processing := q.count()
	q.mu.Lock()
	defer q.mu.Unlock()
	return admin.Stats{
		Ready:      ready,
		Scheduled:  int64(len(q.scheduled)),
		Processing: processing,
		Dead:       int64(len(q.dead)),
	}
}
