package dbpubsub

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// delivery is a row claimed for a consumer of this PubSub.
type delivery struct {
	id      int64
	data    []byte
	attempt int
	token   int64
	runAt   time.Time
	leased  time.Time // when the lease was last set (local clock); guarded by topicState.mu while buffered
}

// topicState is what the handles on one topic name share within a PubSub:
// the rows claimed for its consumers and the goroutine that claims them.
type topicState struct {
	ps   *PubSub
	name string

	meta atomic.Pointer[topicMeta] // once looked up

	mu       sync.Mutex
	buf      []*delivery // claimed, not handed out, oldest first
	waiters  []*waiter   // Dequeue calls waiting, first come first served
	lastWant time.Time   // when a Dequeue call last looked

	kick    chan struct{} // the waiters changed
	startMu sync.Mutex
	started bool
	wakeMu  sync.Mutex
	wakeCh  chan struct{} // closed when a message may have become ready

	// The keyset floor of the claim in the ready table, owned by the
	// fetcher goroutine: the last ready row a full batch claimed. Claims
	// start above it, so they skip the index entries of rows claimed
	// before (dead tuples until vacuum, which made claims read thousands
	// of buffers deep into a long drain). A row may appear below the floor
	// when the transaction that enqueued it commits late: the floor is
	// dropped whenever a claim comes back short, and at the latest
	// floorTTL after a full scan. (Rows given back or retried go to the
	// message table, which claims always scan whole.)
	floorID    int64 // 0: no floor
	floorUntil time.Time
}

// floorTTL bounds how long rows below the claim's keyset floor can wait.
const floorTTL = time.Second

// waiter is a Dequeue call waiting for a row. The fetcher sends it one row
// (never blocking: cap 1) when it takes it off the waiters list.
type waiter struct{ ch chan *delivery }

func newTopicState(ps *PubSub, name string) *topicState {
	return &topicState{
		ps:     ps,
		name:   name,
		kick:   make(chan struct{}, 1),
		wakeCh: make(chan struct{}),
	}
}

// take returns a buffered row, or else registers the caller as a waiter.
func (st *topicState) take() (*delivery, *waiter) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lastWant = time.Now()
	if len(st.buf) > 0 {
		d := st.buf[0]
		st.buf[0] = nil
		st.buf = st.buf[1:]
		return d, nil
	}
	w := &waiter{ch: make(chan *delivery, 1)}
	st.waiters = append(st.waiters, w)
	return nil, w
}

// leave takes back a waiter that gives up. A row already sent to it goes
// back to the front of the buffer for the next caller.
func (st *topicState) leave(w *waiter) {
	st.mu.Lock()
	if i := slices.Index(st.waiters, w); i >= 0 {
		st.waiters = slices.Delete(st.waiters, i, i+1)
	} else {
		st.buf = slices.Insert(st.buf, 0, <-w.ch)
	}
	st.mu.Unlock()
	st.poke()
}

// deliver hands claimed rows to the waiters, in order, and buffers the rest.
func (st *topicState) deliver(rows []*delivery) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, d := range rows {
		if len(st.waiters) == 0 {
			st.buf = append(st.buf, d)
			continue
		}
		w := st.waiters[0]
		st.waiters[0] = nil
		st.waiters = st.waiters[1:]
		w.ch <- d
	}
}

// wanted says how many rows to claim: one per waiter plus prefetch, up to
// Options.ClaimBatch buffered; and how many rows are buffered.
func (st *topicState) wanted(prefetch int) (n, buffered, waiting int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	waiting, buffered = len(st.waiters), len(st.buf)
	if waiting > 0 {
		n = min(waiting+prefetch, st.ps.opts.ClaimBatch) - buffered
	}
	return n, buffered, waiting
}

func (st *topicState) closedErr() error {
	return fmt.Errorf("dbpubsub: topic %q: %w", st.name, pubsub.ErrClosed)
}

// channel returns the topic's notification channel (see lookup).
func (st *topicState) channel(ctx context.Context) (string, error) {
	m, err := st.lookup(ctx)
	if err != nil {
		return "", err
	}
	return m.ch, nil
}

// topicMeta is what a topic's statements need from the database: its
// notification channel, its ready table (migration 0003) and how many ids
// one nextval of the id sequence reserves (migration 0004).
type topicMeta struct {
	ch    string
	ready string // the ready table's schema-qualified, quoted name
	block int64  // the sequence's increment: a statement of up to block rows takes one nextval
	stmts readyStatements
}

// many returns the statement that inserts rows messages for now, outside
// or inside a caller's transaction: with the ids of one block when they
// fit in one (stmts.insertBlock, stmts.enqueueBatchBlock), else with one
// nextval per row (stmts.insertMany, stmts.enqueueBatch).
func (m *topicMeta) many(rows int, inTx bool) string {
	block := int64(rows) <= m.block // the block holds them all (an increment below 1 holds none)
	switch {
	case inTx && block:
		return m.stmts.enqueueBatchBlock
	case inTx:
		return m.stmts.enqueueBatch
	case block:
		return m.stmts.insertBlock
	}
	return m.stmts.insertMany
}

// lookup returns st's topicMeta, looking it up once, which creates the
// topic's ready table on the topic's first use in the database. It wraps
// migrations.ErrNotMigrated when the schema lacks the message table or
// migration 0003.
func (st *topicState) lookup(ctx context.Context) (*topicMeta, error) {
	if m := st.meta.Load(); m != nil {
		return m, nil
	}
	ps := st.ps
	q, err := ps.qualifiedTable(ctx)
	if err != nil {
		return nil, err
	}
	// The function is created in the message table's schema. No lock
	// while querying, as in qualifiedTable: concurrent look-ups find the
	// same table.
	schema := quoteIdent(q[:strings.LastIndexByte(q, '.')])
	fn, table := schema+"."+quoteIdent(migrations.ReadyTableFunc(ps.opts.Table)), schema+"."+quoteIdent(ps.opts.Table)
	var ready string
	err = ps.sqldb.QueryRowContext(ctx, "SELECT "+fn+"($1)", st.name).Scan(&ready)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42883" { // undefined_function
		return nil, fmt.Errorf("dbpubsub: %w", migrations.NotMigratedError(ps.opts.Table, "lacks migration 0003 (a ready table per topic)"))
	}
	if err != nil {
		return nil, fmt.Errorf("dbpubsub: look up the ready table of topic %q: %w", st.name, err)
	}
	seq, err := ps.idSeq(ctx, table)
	if err != nil {
		return nil, err
	}
	m := &topicMeta{ch: channelName(q, st.name), ready: ready, block: seq.increment,
		stmts: newReadyStatements(ps.opts.Table, ready, seq.name)}
	st.meta.Store(m)
	return m, nil
}

// wake tells the fetcher that a message may have become ready.
func (st *topicState) wake() {
	st.wakeMu.Lock()
	close(st.wakeCh)
	st.wakeCh = make(chan struct{})
	st.wakeMu.Unlock()
}

func (st *topicState) wakeChan() <-chan struct{} {
	st.wakeMu.Lock()
	defer st.wakeMu.Unlock()
	return st.wakeCh
}

// poke tells the fetcher that the demand changed.
func (st *topicState) poke() {
	select {
	case st.kick <- struct{}{}:
	default:
	}
}

// start starts the fetcher once, unless the PubSub is closed.
func (st *topicState) start() {
	st.startMu.Lock()
	defer st.startMu.Unlock()
	if st.started {
		return
	}
	ps := st.ps
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if ps.isClosed {
		return
	}
	st.started = true
	ps.loops.Add(1)
	go st.fetch()
}

// surplusGrace is how long claimed rows may wait in the buffer once no
// Dequeue call looks for them, before they are given back.
const surplusGrace = 50 * time.Millisecond

// fetch claims rows for the Dequeue calls waiting on the topic: as many
// rows as there are calls plus Options.Prefetch, up to Options.ClaimBatch
// in the buffer. When none is ready it sleeps until a notification, a
// local enqueue, the next due message, or the poll interval. Rows left in
// the buffer when Dequeue calls stop coming are given back.
func (st *topicState) fetch() {
	ps := st.ps
	defer ps.loops.Done()
	log := ps.opts.Logger.With("topic", st.name)
	var bo backoff

	// Listen before the first claim, so that nothing enqueued after an
	// empty claim goes unnoticed.
	for {
		ch, err := st.channel(ps.ctx)
		if err == nil {
			if ps.listener != nil {
				// A listener that cannot connect is not waited for long:
				// it wakes every fetcher once it is connected.
				active := ps.listener.subscribe(ch, st)
				t := time.NewTimer(min(ps.opts.PollInterval, 2*time.Second))
				select {
				case <-active:
				case <-t.C:
				case <-ps.closed:
				}
				t.Stop()
			}
			break
		}
		log.Warn("dbpubsub: cannot look up the message table; retrying", "error", err)
		if !ps.sleep(bo.next()) {
			return
		}
	}
	bo.reset()

	// Prefetching pays when consumers come back faster than a claim's
	// round trip: it starts at Options.Prefetch and doubles, up to
	// ClaimBatch, while the consumers empty the buffer before a claim
	// returns. When prefetched rows had to be given back, the consumers are
	// slower, and it stops until several of them wait on an empty buffer
	// again.
	prefetch := ps.opts.Prefetch
	for {
		if ps.closing() {
			return
		}
		n, buffered, waiting := st.wanted(prefetch)
		if waiting >= 2 && buffered == 0 && prefetch == 0 {
			prefetch = ps.opts.Prefetch
			n, buffered, _ = st.wanted(prefetch)
		}
		if n <= 0 {
			// Rows left in the buffer are looked at again shortly, and
			// given back if no Dequeue call came meanwhile.
			var recheck <-chan time.Time
			var t *time.Timer
			if buffered > 0 {
				t = time.NewTimer(surplusGrace)
				recheck = t.C
			}
			select {
			case <-st.kick:
			case <-recheck:
				st.renewBuffered()
				if st.releaseIdle() > 0 {
					prefetch = 0
				}
			case <-ps.closed:
			}
			if t != nil {
				t.Stop()
			}
			continue
		}
		wake := st.wakeChan()
		rows, err := st.claim(n)
		if err != nil {
			if ps.closing() {
				return
			}
			log.Warn("dbpubsub: claim failed; retrying", "error", err)
			if !ps.sleep(bo.next()) {
				return
			}
			continue
		}
		bo.reset()
		if len(rows) == n && prefetch > 0 {
			// The consumers emptied the buffer while the claim ran, and
			// wait: claim further ahead next time, up to ClaimBatch.
			if _, buffered, waiting := st.wanted(0); buffered == 0 && waiting > 0 {
				prefetch = min(2*prefetch, ps.opts.ClaimBatch)
			}
		}
		st.deliver(rows)
		if len(rows) == n {
			continue
		}
		// Nothing more is ready: sleep until something may be.
		wait := ps.opts.PollInterval
		if next, ok, err := st.nextRunAt(); err != nil {
			log.Warn("dbpubsub: looking up the next due message failed", "error", err)
		} else if ok {
			wait = min(wait, max(time.Until(next)+time.Millisecond, 5*time.Millisecond))
		}
		t := time.NewTimer(wait)
		r := time.NewTimer(surplusGrace)
		var recheck <-chan time.Time
		if _, buffered, _ := st.wanted(0); buffered > 0 {
			recheck = r.C // the rows claimed may find no taker: look again soon
		}
		select {
		case <-wake:
		case <-t.C:
		case <-recheck:
			st.renewBuffered()
		case <-ps.closed:
		}
		t.Stop()
		r.Stop()
	}
}

// claim takes up to n ready rows, oldest first.
func (st *topicState) claim(n int) ([]*delivery, error) {
	ps := st.ps
	if st.floorID != 0 && !time.Now().Before(st.floorUntil) {
		st.floorID = 0
	}
	// The fetcher claims only once lookup succeeded.
	rows, err := ps.sqldb.QueryContext(ps.ctx, st.meta.Load().stmts.claim, st.name, n, ps.opts.Lease.Microseconds(), st.floorID)
	if err != nil {
		return nil, fmt.Errorf("dbpubsub: claim on topic %q: %w", st.name, err)
	}
	defer rows.Close()
	now := time.Now()
	var out []*delivery
	var top int64 // the highest ready row claimed
	moved := 0
	for rows.Next() {
		d := &delivery{leased: now}
		var ready bool
		if err := rows.Scan(&d.id, &d.data, &d.attempt, &d.token, &d.runAt, &ready); err != nil {
			return nil, fmt.Errorf("dbpubsub: claim on topic %q: %w", st.name, err)
		}
		if ready {
			top = max(top, d.id)
			moved++
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dbpubsub: claim on topic %q: %w", st.name, err)
	}
	ps.noteMoved(moved)
	sortDeliveries(out)
	switch {
	case len(out) < n:
		st.floorID = 0 // the end of the ready rows: the next claim looks at them all
	case top != 0:
		if st.floorID == 0 {
			st.floorUntil = now.Add(floorTTL)
		}
		st.floorID = top
	}
	return out, nil
}

// nextRunAt says when the topic's next pending message is due.
func (st *topicState) nextRunAt() (time.Time, bool, error) {
	ps := st.ps
	var next sql.NullTime
	if err := ps.sqldb.QueryRowContext(ps.ctx, ps.stmts.nextRunAt, st.name).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("dbpubsub: next due message on topic %q: %w", st.name, err)
	}
	return next.Time, next.Valid, nil
}

// handOut turns a claimed row into a delivery for the caller. A row that
// waited long in the buffer has its lease renewed first; nil means the row
// was lost meanwhile (its lease ran out and it went to someone else).
func (st *topicState) handOut(ctx context.Context, d *delivery) *message {
	ps := st.ps
	if time.Since(d.leased) > ps.opts.Lease/4 {
		if err := ps.begin(); err != nil {
			return nil
		}
		res, err := ps.sqldb.ExecContext(ctx, ps.stmts.extend, d.id, d.token, ps.opts.Lease.Microseconds())
		ps.end()
		if err != nil {
			// Give it back rather than leave it leased to nobody.
			st.release([]*delivery{d})
			return nil
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		d.leased = time.Now()
	}
	return &message{st: st, d: d}
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
		rows, err := ps.sqldb.QueryContext(ps.ctx, ps.stmts.renew, ids, tokens, ps.opts.Lease.Microseconds())
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
