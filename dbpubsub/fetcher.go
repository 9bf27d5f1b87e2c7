package dbpubsub

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/conveyorgo/conveyor/internal/service"
	"github.com/conveyorgo/conveyor/pubsub"
)

// The fetcher of a topic claims rows for the Dequeue calls waiting on it,
// within one PubSub: as many rows as there are calls plus a prefetch, up
// to Options.ClaimBatch in the buffer. When none is ready it sleeps until
// a notification, a local enqueue, the next due message, or the poll
// interval. Rows left in the buffer when Dequeue calls stop coming are
// given back; rows that wait long have their leases renewed.

// surplusGrace is how long claimed rows may wait in the buffer once no
// Dequeue call looks for them, before they are given back.
const surplusGrace = 50 * time.Millisecond

// start starts the fetcher once, unless the PubSub is closed.
func (st *topicState) start() {
	st.startMu.Lock()
	defer st.startMu.Unlock()
	if !st.started {
		st.started = st.ps.loops.Go(st.fetch)
	}
}

// fetcher is the state of one fetcher loop.
type fetcher struct {
	st  *topicState
	log *slog.Logger
	bo  backoff
	// prefetch starts at Options.Prefetch and doubles, up to ClaimBatch,
	// while the consumers empty the buffer before a claim returns; it
	// drops to 0 when prefetched rows had to be given back (the consumers
	// are slower than a claim), until several consumers wait on an empty
	// buffer again.
	prefetch int
	// checked is when the fetcher of a named subscription last found it
	// still exists, after a claim that did not fill its waiters.
	checked time.Time
}

// fetch is the fetcher loop of st.
func (st *topicState) fetch(stop <-chan struct{}) {
	f := &fetcher{st: st, log: st.ps.opts.Logger.With("topic", st.name), prefetch: st.ps.opts.Prefetch}
	if !f.listen(stop) {
		return
	}
	for !st.ps.closing() {
		n, buffered, waiting := st.wanted(f.prefetch)
		if waiting >= 2 && buffered == 0 && f.prefetch == 0 {
			f.prefetch = st.ps.opts.Prefetch
			n, buffered, _ = st.wanted(f.prefetch)
		}
		if n <= 0 {
			f.idle(stop, buffered)
			continue
		}
		f.round(stop, n)
	}
}

// listen looks the topic up and LISTENs to its channel before the first
// claim, so that nothing enqueued after an empty claim goes unnoticed. A
// listener that cannot connect is not waited for long: it wakes every
// fetcher once it is connected. It reports false when the PubSub closed.
func (f *fetcher) listen(stop <-chan struct{}) bool {
	ps := f.st.ps
	for {
		ctx, cancel := ps.stmtCtx(ps.ctx)
		ch, err := f.st.channel(ctx)
		cancel()
		if err == nil {
			if ps.listener != nil {
				active := ps.listener.subscribe(ch, f.st)
				t := time.NewTimer(min(ps.opts.PollInterval, 2*time.Second))
				select {
				case <-active:
				case <-t.C:
				case <-stop:
				}
				t.Stop()
			}
			f.bo.reset()
			return true
		}
		f.st.reportFetch(err, func() { f.log.Warn("dbpubsub: cannot look up the message table; retrying", "error", err) })
		if !service.Sleep(stop, f.bo.next()) {
			return false
		}
	}
}

// idle waits while no Dequeue call wants a row. Rows left in the buffer
// are looked at again shortly, and given back if no Dequeue call came
// meanwhile.
func (f *fetcher) idle(stop <-chan struct{}, buffered int) {
	if f.wait(stop, wakeups{demand: f.st.demand, recheck: buffered > 0}) {
		f.st.renewBuffered()
		if f.st.releaseIdle() > 0 {
			f.prefetch = 0
		}
	}
}

// round claims n rows and hands them out; when fewer were ready it sleeps
// until more may be.
func (f *fetcher) round(stop <-chan struct{}, n int) {
	st, ps := f.st, f.st.ps
	ready := st.readyChan()
	gen, pgen := st.dropped.Load(), st.pauseGen()
	rows, paused, err := st.claim(n)
	if err != nil {
		if !ps.closing() {
			st.reportFetch(err, func() { f.log.Warn("dbpubsub: claim failed; retrying", "error", err) })
			service.Sleep(stop, f.bo.next())
		}
		return
	}
	f.bo.reset()
	if len(rows) == n && f.prefetch > 0 {
		// The consumers emptied the buffer while the claim ran, and
		// wait: claim further ahead next time.
		if _, buffered, waiting := st.wanted(0); buffered == 0 && waiting > 0 {
			f.prefetch = min(2*f.prefetch, ps.opts.ClaimBatch)
		}
	}
	if st.dropped.Load() != gen {
		rows = nil // the subscription was deleted meanwhile, with these rows
	}
	if !st.claimedPause(pgen, paused) {
		st.release(rows) // paused, or maybe: see claimedPause
		rows = nil
		if st.pause.on.Load() {
			st.releaseAll()
		}
	}
	st.deliver(rows)
	if len(rows) == n {
		return
	}
	if f.deleted() {
		return
	}
	// Nothing more is ready: sleep until something may be.
	poll := ps.opts.PollInterval
	if st.pause.on.Load() {
		// Resume wakes the fetcher (ready); without LISTEN, the next
		// poll's claim tells.
	} else if next, ok, err := st.nextRunAt(); err != nil {
		f.log.Warn("dbpubsub: looking up the next due message failed", "error", err)
	} else if ok {
		poll = min(poll, max(time.Until(next)+time.Millisecond, 5*time.Millisecond))
	}
	_, buffered, _ := st.wanted(0)
	if f.wait(stop, wakeups{ready: ready, poll: poll, recheck: buffered > 0}) {
		st.renewBuffered() // the rows claimed may find no taker: look again soon
	}
}

// deleted reports whether the named subscription whose calls wait for
// rows was deleted, by another process, and if so ends those calls with
// pubsub.ErrNoSubscription (topicState.gone). It looks at most once per
// poll interval, when a claim did not fill the waiting calls, so a call
// waiting on a deleted subscription returns within about one poll.
func (f *fetcher) deleted() bool {
	st, ps := f.st, f.st.ps
	if st.sub == pubsub.DefaultSubscription || time.Since(f.checked) < ps.opts.PollInterval {
		return false
	}
	ok, err := st.exists(ps.ctx)
	if err != nil {
		if !ps.closing() {
			f.log.Debug("dbpubsub: looking up the subscription failed; the next poll looks again", "error", err)
		}
		return false
	}
	f.checked = time.Now()
	if ok {
		return false
	}
	st.gone()
	return true
}

// wakeups are what a fetcher's wait ends on, besides stop; a nil channel
// or a zero poll is not waited for.
type wakeups struct {
	demand  <-chan struct{} // the Dequeue calls changed
	ready   <-chan struct{} // a message may have become ready
	poll    time.Duration   // look anyway after this
	recheck bool            // rows wait in the buffer: look at them after surplusGrace
}

// wait waits for the first of w, or stop; it reports whether it was the
// recheck of the buffered rows.
func (f *fetcher) wait(stop <-chan struct{}, w wakeups) bool {
	var poll, recheck <-chan time.Time
	if w.poll > 0 {
		t := time.NewTimer(w.poll)
		defer t.Stop()
		poll = t.C
	}
	if w.recheck {
		t := time.NewTimer(surplusGrace)
		defer t.Stop()
		recheck = t.C
	}
	select {
	case <-w.demand:
	case <-w.ready:
	case <-poll:
	case <-recheck:
		return true
	case <-stop:
	}
	return false
}

// claimFloor is the keyset floor of the claim in a topic's ready table: the
// last ready row a full batch claimed. Claims start above it, so they skip
// the index entries of rows claimed before (dead tuples until vacuum). A
// row may appear below the floor when the transaction that enqueued it
// commits late: the floor is dropped whenever a claim comes back short, and
// at the latest floorTTL after it was set. (Rows given back or retried go
// to the message table, which claims always scan whole.)
type claimFloor struct {
	id    int64 // 0: no floor
	until time.Time
}

// floorTTL bounds how long rows below the claim's keyset floor can wait.
const floorTTL = time.Second

// at returns the floor for a claim at now (0: none).
func (f *claimFloor) at(now time.Time) int64 {
	if f.id != 0 && !now.Before(f.until) {
		f.id = 0
	}
	return f.id
}

// claimed moves the floor after a claim that was full or not and whose
// highest ready row was top (0: none).
func (f *claimFloor) claimed(full bool, top int64, now time.Time) {
	switch {
	case !full:
		f.id = 0 // the end of the ready rows: the next claim looks at them all
	case top != 0:
		if f.id == 0 {
			f.until = now.Add(floorTTL)
		}
		f.id = top
	}
}

// claim takes up to n ready rows, oldest first, and says whether the
// queue was paused (then it took none: pause.go).
func (st *topicState) claim(n int) (_ []*delivery, paused bool, _ error) {
	ps := st.ps
	now := time.Now()
	ctx, cancel := ps.stmtCtx(ps.ctx)
	defer cancel()
	// The fetcher claims only once lookup succeeded.
	rows, err := ps.sqldb.QueryContext(ctx, st.meta.Load().stmts.claim, st.name, n, ps.opts.Lease.Microseconds(), st.floor.at(now))
	if err != nil {
		return nil, false, fmt.Errorf("dbpubsub: claim on %s: %w", st.label(), err)
	}
	defer rows.Close()
	var out []*delivery
	var top int64 // the highest ready row claimed
	moved := 0
	var header []byte // the JSON object of a row's header; nil if it has none
	for rows.Next() {
		d := &delivery{leased: now}
		var ready bool
		if err := rows.Scan(&d.id, &d.data, &d.attempt, &d.token, &d.runAt, &header, &ready); err != nil {
			return nil, false, fmt.Errorf("dbpubsub: claim on %s: %w", st.label(), err)
		}
		if d.id == 0 { // the row that says the queue is paused
			paused = true
			continue
		}
		if header != nil {
			d.header = st.decodeHeader(d.id, header)
		}
		if ready {
			top = max(top, d.id)
			moved++
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("dbpubsub: claim on %s: %w", st.label(), err)
	}
	ps.noteMoved(moved)
	sortDeliveries(out)
	st.floor.claimed(len(out) == n, top, now)
	return out, paused, nil
}

// decodeHeader returns the header of message id, stored as the JSON object
// b: by parseHeader in the form PostgreSQL prints it in, else by
// json.Unmarshal. One not written by dbpubsub that is no object of strings
// is logged and left out: the message is delivered all the same.
func (st *topicState) decodeHeader(id int64, b []byte) pubsub.Header {
	h, ok := parseHeader(b)
	if ok {
		return h
	}
	if err := json.Unmarshal(b, &h); err != nil {
		st.ps.opts.Logger.Warn("dbpubsub: a message's headers are not a JSON object of strings; delivering it without them",
			"topic", st.name, "message_id", id, "error", err)
		return nil
	}
	return h
}

// nextRunAt says when the topic's next pending message is due.
func (st *topicState) nextRunAt() (time.Time, bool, error) {
	ps := st.ps
	var next sql.NullTime
	ctx, cancel := ps.stmtCtx(ps.ctx)
	defer cancel()
	if err := ps.sqldb.QueryRowContext(ctx, ps.stmts.nextRunAt, st.name).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("dbpubsub: next due message on %s: %w", st.label(), err)
	}
	return next.Time, next.Valid, nil
}

// handOut makes a claimed row the caller's delivery and reports whether
// it could. A row that waited long in the buffer has its lease renewed
// first; false means the row was lost meanwhile (its lease ran out and it
// went to someone else).
func (st *topicState) handOut(ctx context.Context, d *delivery) bool {
	ps := st.ps
	if time.Since(d.leased) > ps.opts.Lease/4 {
		if err := ps.begin(); err != nil {
			return false
		}
		sctx, cancel := ps.stmtCtx(ctx)
		res, err := ps.sqldb.ExecContext(sctx, ps.stmts.extend, d.id, d.token, ps.opts.Lease.Microseconds())
		cancel()
		ps.end()
		if err != nil {
			// Give it back rather than leave it leased to nobody.
			st.release([]*delivery{d})
			return false
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false
		}
		d.leased = time.Now()
	}
	d.fill()
	return true
}

// renewBuffered renews the leases of the buffered rows that have used a
// quarter of theirs, so that no row's lease runs out while it waits unseen;
// a row whose lease ran out anyway (it went to another consumer) leaves the
// buffer.
func (st *topicState) renewBuffered() {
	ps := st.ps
	st.mu.Lock()
	var ids, tokens []int64
	for _, d := range st.buf {
		if time.Since(d.leased) > ps.opts.Lease/4 {
			ids, tokens = append(ids, d.id), append(tokens, d.token)
		}
	}
	st.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	start := time.Now()
	renewed := make(map[int64]bool, len(ids))
	err := func() error {
		ctx, cancel := ps.stmtCtx(ps.ctx)
		defer cancel()
		rows, err := ps.sqldb.QueryContext(ctx, ps.stmts.renew, ids, tokens, ps.opts.Lease.Microseconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			renewed[id] = true
		}
		return rows.Err()
	}()
	if err != nil {
		ps.opts.Logger.Warn("dbpubsub: renewing the leases of buffered messages failed", "topic", st.name, "error", err)
		return // handOut renews each one, or drops it
	}
	asked := make(map[int64]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.buf = slices.DeleteFunc(st.buf, func(d *delivery) bool {
		switch {
		case !asked[d.id]:
			return false
		case renewed[d.id]:
			d.leased = start
			return false
		default:
			return true // lost: its lease ran out
		}
	})
}

// releaseIdle gives back the buffered rows if no Dequeue call looked for
// surplusGrace, and says how many.
func (st *topicState) releaseIdle() int {
	st.mu.Lock()
	if len(st.waiters) > 0 || time.Since(st.lastWant) < surplusGrace {
		st.mu.Unlock()
		return 0
	}
	ds := st.buf
	st.buf = nil
	st.mu.Unlock()
	st.release(ds)
	return len(ds)
}

// releaseAll gives back every row claimed and not handed out. Called by
// Close, once the fetcher has stopped.
func (st *topicState) releaseAll() {
	st.mu.Lock()
	ds := st.buf
	st.buf = nil
	st.mu.Unlock()
	st.release(ds)
}

func (st *topicState) release(ds []*delivery) {
	if len(ds) == 0 {
		return
	}
	ps := st.ps
	// Lock rows in id order, as every grouped statement does.
	slices.SortFunc(ds, func(a, b *delivery) int { return cmp.Compare(a.id, b.id) })
	ids := make([]int64, len(ds))
	tokens := make([]int64, len(ds))
	for i, d := range ds {
		ids[i], tokens[i] = d.id, d.token
	}
	ctx, cancel := context.WithTimeout(ps.ctx, ps.opts.CloseTimeout)
	defer cancel()
	ch, _ := st.channel(ctx) // known: rows were claimed
	if _, err := ps.sqldb.ExecContext(ctx, ps.stmts.release, ids, tokens, ch); err != nil {
		ps.opts.Logger.Warn("dbpubsub: giving back claimed messages failed; they come back when their lease runs out",
			"topic", st.name, "count", len(ds), "error", err)
	}
}

// sortDeliveries orders claimed rows by run_at, then id (RETURNING keeps
// no order; a ready row's run_at is when it was enqueued).
func sortDeliveries(ds []*delivery) {
	slices.SortFunc(ds, func(a, b *delivery) int {
		if c := a.runAt.Compare(b.runAt); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}
