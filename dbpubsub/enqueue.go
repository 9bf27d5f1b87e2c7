package dbpubsub

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The enqueues outside a caller's transaction that a Topic handle is asked
// for concurrently share statements. Up to enqueueStatements statements of
// a handle are in flight at once; a call that finds them busy queues its
// rows, and the next call to run a statement (its leader) takes the queued
// rows along: one INSERT, one commit and one round trip for many calls. A
// call that finds a statement free runs its own at once.
//
// Each call keeps the contract of PubSub.write: a leader takes a
// connection with its own ctx before it takes the queued rows, so a queued
// call whose ctx ends before a leader takes it returns ctx's error and
// added nothing; once taken, it awaits the statement's outcome, which is
// the truth for all its rows (one statement: all or none). A batch's rows
// are never split between statements, and keep their order.

// enqueueStatements is how many group statements a Topic handle may have
// in flight at once. Measured with 8 producers of single messages on a
// loaded 2-core machine (fsync off), one or two gave the same rate; one
// spent the least CPU per message (85 µs client and server, two 118 µs,
// four 155 µs, none grouped 210 µs), two keep a second server core busy.
const enqueueStatements = 2

// A call of more than maxCallRows rows or maxGroupBytes bytes runs its own
// statement at once, beside the groups: its cost is mostly per row, and
// such statements side by side use as many server cores as they need.
// (Grouped, batches of 100 from 8 producers measured 0.42× to 0.65× the
// rate of plain INSERTs, depending on the other load of the machine; alone
// 0.51× to 0.58×.)
// A leader adds queued calls to its own rows up to maxGroupRows and
// maxGroupBytes.
const (
	maxCallRows   = 32
	maxGroupRows  = 1000
	maxGroupBytes = 1 << 20
)

// enqReq is one call's rows, waiting for or in a statement.
type enqReq struct {
	data  [][]byte
	at    time.Time // zero: now
	size  int       // bytes of data
	meta  *topicMeta
	state enqState // guarded by the enqGroup's mu
	err   error    // the outcome, set before state becomes enqDone
	ready chan struct{}
}

type enqState uint8

const (
	enqQueued  enqState = iota
	enqLeading          // taken off the queue to run the next statement
	enqTaken            // in a leader's statement
	enqDone             // err is the outcome
)

// enqGroup queues the calls of one Topic handle; its zero value is ready.
type enqGroup struct {
	mu      sync.Mutex
	queue   []*enqReq
	leaders int // statements being prepared or in flight
}

// insert adds r's rows to the topic, sharing a statement with concurrent
// calls on t, and returns once they are committed (nil) or not added (an
// error).
func (t *Topic) insert(ctx context.Context, r *enqReq) error {
	if len(r.data) > maxCallRows || r.size > maxGroupBytes {
		ps := t.st.ps
		err := ps.write(ctx, ps.sqldb, func(ctx context.Context, ex execer) error {
			return t.insertRows(ctx, ex, []*enqReq{r})
		})
		if err == nil {
			t.st.committed(nil, r.meta.ch)
		}
		return err
	}
	g := &t.enq
	g.mu.Lock()
	if g.leaders < enqueueStatements {
		g.leaders++
		g.mu.Unlock()
		return t.lead(ctx, r)
	}
	r.ready = make(chan struct{}, 1)
	g.queue = append(g.queue, r)
	g.mu.Unlock()

	select {
	case <-r.ready:
	case <-ctx.Done():
	}
	g.mu.Lock()
	switch r.state {
	case enqQueued: // ctx ended first
		for i, q := range g.queue {
			if q == r {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				break
			}
		}
		g.mu.Unlock()
		return ctx.Err()
	case enqLeading:
		g.mu.Unlock()
		return t.lead(ctx, r)
	case enqTaken: // ctx ended first: the outcome is awaited all the same
		g.mu.Unlock()
		<-r.ready
	default:
		g.mu.Unlock()
	}
	return r.err
}

// lead runs a statement with r's rows and the queued calls it can take,
// then hands its place to the next queued call.
func (t *Topic) lead(ctx context.Context, r *enqReq) error {
	ps := t.st.ps
	conn, err := ps.sqldb.Conn(ctx)
	if err == nil && ctx.Err() != nil {
		conn.Close()
		err = ctx.Err()
	}
	if err != nil {
		t.enq.handOff()
		return err
	}
	group := t.enq.take(r)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ps.opts.StatementTimeout)
	err = t.insertRows(sctx, conn, group)
	for _, q := range group {
		q.err = err
	}
	if len(group) > 1 && rowDependent(err) {
		// Nothing of the statement was added. The rows of one call must
		// not fail the others: each call tries again alone.
		for _, q := range group {
			q.err = t.insertRows(sctx, conn, []*enqReq{q})
		}
	}
	cancel()
	conn.Close()
	for _, q := range group {
		if q.err == nil {
			t.st.committed(nil, r.meta.ch)
			break
		}
	}
	t.enq.finish(group[1:])
	t.enq.handOff()
	return r.err
}

// rowDependent reports whether err, the error of a statement, may come
// from some of its rows only (a trigger or a constraint that rejects them)
// rather than from the connection, the server or the schema.
func rowDependent(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	switch pgErr.Code[:2] {
	case "09", "22", "23", "27", "2F", "38", "39", "P0":
		return true
	}
	return false
}

// take returns r and the queued calls that fit with it, in queue order,
// marked taken.
func (g *enqGroup) take(r *enqReq) []*enqReq {
	group := []*enqReq{r}
	rows, size := len(r.data), r.size
	g.mu.Lock()
	defer g.mu.Unlock()
	keep := g.queue[:0]
	for _, q := range g.queue {
		if rows+len(q.data) > maxGroupRows || size+q.size > maxGroupBytes {
			keep = append(keep, q)
			continue
		}
		q.state = enqTaken
		group = append(group, q)
		rows += len(q.data)
		size += q.size
	}
	clear(g.queue[len(keep):])
	g.queue = keep
	return group
}

// finish tells the calls of group that their outcome is known.
func (g *enqGroup) finish(group []*enqReq) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, q := range group {
		q.state = enqDone
		q.ready <- struct{}{}
	}
}

// handOff gives a leader's place to the first queued call, if any.
func (g *enqGroup) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.leaders--
		return
	}
	q := g.queue[0]
	g.queue[0] = nil
	g.queue = g.queue[1:]
	q.state = enqLeading
	q.ready <- struct{}{}
}

// insertRows inserts the rows of group in one statement, in order.
//
// Not COPY: a binary COPY FROM STDIN of the same rows, sent in one write
// (commit 7934bdc, reverted), gave 1.03-1.15× the rate of INSERT … unnest
// into a bare table with 8 producers of 100-row batches on a 2-core
// machine, where this INSERT (then with unnest in FROM) gave 0.94-0.96×;
// but with 1, 2 or 4 producers it lost to this INSERT (0.71-0.86×, 0.84×,
// 0.93× against 0.90-0.94×, 0.91×, 0.98×), and past ~200 rows a COPY cost
// PostgreSQL 15 more per row at any concurrency: it makes a tuple slot per
// buffered row, each pinning the table's descriptor in its resource owner.
//
// The bytea[] parameters stay [][]byte: as pgtype.FlatArray (commit
// 4c5fc27) pgx spent less client CPU on them, but the batch scenario of
// the bench harness fell from 0.90-0.93× to 0.86-0.88× the baseline (four
// interleaved 9-repetition runs of each).
func (t *Topic) insertRows(ctx context.Context, ex execer, group []*enqReq) error {
	st := t.st
	stmts, meta := &st.ps.stmts, group[0].meta
	rows, delayed := 0, false
	for _, q := range group {
		rows += len(q.data)
		delayed = delayed || !q.at.IsZero()
	}
	var err error
	switch {
	case rows == 1 && !delayed:
		_, err = ex.ExecContext(ctx, meta.stmts.insert, st.name, group[0].data[0])
	case rows == 1:
		_, err = ex.ExecContext(ctx, stmts.insertAt, st.name, group[0].data[0], group[0].at)
	case len(group) == 1 && !delayed:
		_, err = ex.ExecContext(ctx, meta.many(rows, false), st.name, group[0].data)
	default:
		data := make([][]byte, 0, rows)
		var at []time.Time
		if delayed {
			at = make([]time.Time, 0, rows)
		}
		for _, q := range group {
			data = append(data, q.data...)
			if delayed {
				for range q.data {
					at = append(at, q.at)
				}
			}
		}
		if delayed {
			_, err = ex.ExecContext(ctx, stmts.insertManyAt, st.name, data, at)
		} else {
			_, err = ex.ExecContext(ctx, meta.many(rows, false), st.name, data)
		}
	}
	return err
}
