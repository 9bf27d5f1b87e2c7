package dbpubsub

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Every enqueue of a handle: its entry points, the write contract they keep,
// and the grouping of concurrent calls into shared statements.
//
// Outside a caller's transaction, the enqueues a handle is asked for
// concurrently share statements: up to enqueueStatements statements of a
// handle are in flight at once; a call that finds them busy queues its
// rows, and the next call to run a statement (its leader) takes the queued
// rows along: one INSERT, one commit and one round trip for many calls. A
// call that finds a statement free runs its own at once. Each call keeps
// the write contract (store.write): a leader takes a connection with its
// own ctx before it takes the queued rows, so a queued call whose ctx ends
// before a leader takes it returns ctx's error and added nothing; once
// taken, it returns the statement's outcome, which is the truth for all its
// rows (one statement: all or none), or, if its ctx ends first, ctx's
// error wrapping ErrOutcomeUnknown. The statement goes on for the others:
// a leader whose ctx can end runs it on a goroutine of its own (run), and
// awaits it as a queued call does. A batch's rows are never split
// between statements, and keep their order.
//
// This grouping runs on the callers' own goroutines rather than on the
// lanes of an internal/batch queue, as settles and notifications do: a
// leader takes its connection with its own ctx, and no goroutine hand-off
// comes between a call and its statement (measured:
// docs/design/dbpubsub.md, "Rejected: enqueue groups on the lanes").

// enqueueStatements is how many group statements a Topic handle may have
// in flight at once: one makes the largest groups, so the fewest commits
// (measurements: docs/design/dbpubsub.md, "Enqueue").
const enqueueStatements = 1

// A call of more than maxCallRows rows or maxGroupBytes bytes runs its own
// statement at once, beside the groups: its cost is mostly per row, and
// such statements side by side use as many server cores as they need. A
// leader adds queued calls to its own rows up to maxGroupRows and
// maxGroupBytes.
const (
	maxCallRows   = 32
	maxGroupRows  = 1000
	maxGroupBytes = 1 << 20
)

// MaxUniqueKeyLen is the longest key EnqueueUnique accepts, in bytes.
const MaxUniqueKeyLen = pubsub.MaxKeyLen

// publisher is the store's side of one topic handle (driver.Topic): its
// publishes, and the grouping of its concurrent enqueues. The engine has
// checked the handle, the payloads' sizes, the header and the key.
//
// An enqueue returns when its rows are committed (or, in a caller's
// transaction, written in it). If ctx ends before the statement is sent,
// it returns ctx's error and added nothing; after, it returns then with
// ctx's error wrapping ErrOutcomeUnknown, and the statement goes on (up to
// Options.StatementTimeout) for the calls that share it. That error, or
// another after the statement was sent (the connection lost, the reply
// never read, the PubSub closed), can hide a commit: the message may be
// stored although the enqueue failed, and one lost reply fails every call
// of the group that shared the statement. A producer that retries such an
// error must retry idempotently: EnqueueUnique with a key of its own, or,
// with events, a consumer that claims the event's ID (pubsub.Claim,
// event.Claim) so that a second copy makes no second effect.
//
// EnqueueAt delivers no earlier than its time by the database's clock.
// EnqueueBatch adds every item in one statement: all or none.
// EnqueueUnique adds nothing while the topic keeps a message enqueued
// under its key: ready, scheduled, processing, dead, or finished and not
// yet pruned (Options.Retention); concurrent calls with one key, from any
// process, add one message. With subscriptions, each subscription that
// does not keep the key gets a copy, and it reports whether one did.
type publisher struct {
	pub *topicState // the topic's default subscription, which routes its publishes
	enq enqGroup    // enqueues sharing statements
}

var (
	_ driver.Topic          = (*publisher)(nil)
	_ driver.BatchPublisher = (*publisher)(nil)
)

// Subscription returns the state of subscription name of the topic: the
// consumer side of a handle (receive.go).
func (p *publisher) Subscription(name string) driver.Subscription {
	return p.pub.ps.state(p.pub.topic, name)
}

// Publish adds m to every subscription of the topic.
func (p *publisher) Publish(ctx context.Context, _ <-chan struct{}, m driver.Outgoing) (bool, error) {
	data := m.Data
	if data == nil {
		data = []byte{} // NULL is not a payload
	}
	c, err := p.open(ctx, [][]byte{data}, m.Header, m.Tx)
	if err != nil {
		return false, err
	}
	defer c.close()
	if m.Key != "" {
		added, err := p.unique(ctx, c, m.Key)
		return added, ctxErr(ctx, err)
	}
	return true, ctxErr(ctx, p.enqueue(ctx, c, m.At))
}

// PublishBatch adds every message of b in one statement, in order.
func (p *publisher) PublishBatch(ctx context.Context, _ <-chan struct{}, b driver.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(b.Data) == 0 {
		return nil
	}
	data := make([][]byte, len(b.Data))
	size := 0
	for i, d := range b.Data {
		if data[i] = d; d == nil {
			data[i] = []byte{} // NULL is not a payload
		}
		size += len(d)
	}
	if max := p.pub.ps.opts.MaxBatchSize; len(data) > 1 && size > max {
		return fmt.Errorf("batch of %d items: %d bytes, over Options.MaxBatchSize (%d): %w", len(data), size, max, pubsub.ErrTooLarge)
	}
	c, err := p.open(ctx, data, b.Header, b.Tx)
	if err != nil {
		return err
	}
	defer c.close()
	if c.idb == nil {
		err = p.insert(ctx, c.req(time.Time{}))
	} else {
		err = c.publish(ctx, func(ctx context.Context, ex execer, rt *route) (bool, error) {
			if rt.own != nil {
				return affected(ex.ExecContext(ctx, rt.own.many(len(c.data), true), rt.names[0], c.data, rt.own.ch, rt.version, c.headers()))
			}
			return affected(ex.ExecContext(ctx, rt.fanNowFor(len(c.data)), p.pub.topic, rt.version, rt.names, c.data, rt.chans, c.headers()))
		})
	}
	return ctxErr(ctx, err)
}

// unique adds c's message under key unless the topic keeps one, and
// reports whether it did.
func (p *publisher) unique(ctx context.Context, c *enqueueCall, key string) (bool, error) {
	stmts := &p.pub.ps.stmts
	added := false
	err := c.publish(ctx, func(ctx context.Context, ex execer, rt *route) (bool, error) {
		var ok bool
		if rt.own != nil {
			var id sql.NullInt64
			err := ex.QueryRowContext(ctx, stmts.enqueueUniq, rt.names[0], c.data[0], c.inStatement(rt.own.ch), key, rt.version,
				headerArg(c.header)).Scan(&ok, &id)
			added = id.Valid
			return ok, err
		}
		var n int64
		err := ex.QueryRowContext(ctx, stmts.fanUnique, p.pub.topic, rt.version, rt.names, c.data[0], key, c.inStatementAll(rt),
			headerArg(c.header)).Scan(&ok, &n)
		added = n > 0
		return ok, err
	})
	if err != nil {
		return false, err
	}
	if added && c.idb == nil {
		c.rt.committed()
	}
	return added, nil
}

// enqueue adds c's message, due at at (zero: now).
func (p *publisher) enqueue(ctx context.Context, c *enqueueCall, at time.Time) error {
	if c.idb == nil {
		return p.insert(ctx, c.req(at))
	}
	stmts := &p.pub.ps.stmts
	return c.publish(ctx, func(ctx context.Context, ex execer, rt *route) (bool, error) {
		switch {
		case rt.own != nil && at.IsZero():
			return affected(ex.ExecContext(ctx, rt.own.stmts.enqueue, rt.names[0], c.data[0], rt.own.ch, rt.version, headerArg(c.header)))
		case rt.own != nil:
			return affected(ex.ExecContext(ctx, stmts.enqueueAt, rt.names[0], c.data[0], at, rt.own.ch, rt.version, headerArg(c.header)))
		case at.IsZero():
			return affected(ex.ExecContext(ctx, rt.fanNowFor(len(c.data)), p.pub.topic, rt.version, rt.names, c.data, rt.chans, c.headers()))
		}
		return affected(ex.ExecContext(ctx, stmts.fanAt, p.pub.topic, rt.version, rt.names, c.data, []time.Time{at}, rt.chans, c.headers()))
	})
}

// enqueueCall is one enqueue on its way to its statement.
type enqueueCall struct {
	p      *publisher
	data   [][]byte // the payloads, none nil (NULL is not a payload)
	size   int      // bytes of data
	header string   // the header of every row, as a JSON object; "" if none (see headerJSON)
	rt     *route   // where the topic's publishes go (subscription.go), as last used
	idb    bun.IDB  // the caller's transaction, if ctx carries one
	ex     execer   // the database/sql handle of idb
}

// open begins an enqueue of data with header h in tx (nil: none): it
// checks ctx and the caller's transaction, reads the topic's route (whose
// look-up creates the ready table on first use), and checks that the
// store is open. The caller closes a call it got.
func (p *publisher) open(ctx context.Context, data [][]byte, h pubsub.Header, tx any) (*enqueueCall, error) {
	st := p.pub
	c := &enqueueCall{p: p, data: data, header: headerJSON(h)}
	for _, d := range data {
		c.size += len(d)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var err error
	if c.idb, c.ex, err = txOf(tx); err != nil {
		return nil, err
	}
	if c.rt, err = st.route(ctx); err != nil {
		return nil, ctxErr(ctx, err)
	}
	if err := st.ps.begin(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *enqueueCall) close() { c.p.pub.ps.end() }

// req returns the call's rows, to run at at (zero: now), for the grouped
// statements outside a caller's transaction.
func (c *enqueueCall) req(at time.Time) *enqReq {
	return &enqReq{data: c.data, at: at, header: c.header, size: c.size + len(c.data)*len(c.header)}
}

// headers is the headers[] parameter of the call's rows: each has the
// call's header (see headerArgs).
func (c *enqueueCall) headers() any {
	if c.header == "" {
		return nil
	}
	hs := make([]*string, len(c.data))
	for i := range hs {
		hs[i] = &c.header
	}
	return hs
}

// headerJSON returns h as the JSON object the headers column keeps
// (migration 0007), "" when there is none: its rows' headers are then
// NULL.
func headerJSON(h pubsub.Header) string {
	if h == nil {
		return ""
	}
	b, _ := json.Marshal(h) // a map of strings, valid UTF-8: never fails
	return string(b)
}

// headerArg is the headers parameter of a statement's one row: NULL for
// no header, which takes no allocation.
func headerArg(header string) any {
	if header == "" {
		return nil
	}
	return header
}

// headerArgs is the headers[] parameter of the rows of group, in order
// (rows in all), each with its call's header: NULL, which takes no
// allocation, when no call has one (the statements' unnest pads it with
// NULLs); otherwise a NULL element for each row without.
func headerArgs(group []*enqReq, rows int) any {
	if !slices.ContainsFunc(group, func(q *enqReq) bool { return q.header != "" }) {
		return nil
	}
	hs := make([]*string, 0, rows)
	for _, q := range group {
		var h *string
		if q.header != "" {
			h = &q.header
		}
		for range q.data {
			hs = append(hs, h)
		}
	}
	return hs
}

// publish runs f, one publish statement on the call's route, in the
// caller's transaction, or on the pool when there is none (see
// store.write). f reports whether the route was current (the statement's
// guard): when it was not, nothing was written, and f runs again on the
// route read anew, in the same transaction.
func (c *enqueueCall) publish(ctx context.Context, f func(context.Context, execer, *route) (bool, error)) error {
	ex, own := c.ex, c.idb == nil
	if own {
		ex = c.p.pub.ps.sqldb
	}
	return c.p.pub.ps.enqWrite(ctx, ex, func(ctx context.Context, ex execer) (err error) {
		meta := ex // the connection write holds (see reroute)
		if !own {
			meta = c.p.pub.ps.sqldb
		}
		c.rt, err = c.p.pub.onRoute(ctx, ex, meta, c.rt, func(rt *route) (bool, error) { return f(ctx, ex, rt) })
		return err
	})
}

// affected reports whether a publish statement wrote (see guard): each
// writes at least one row, or returns one, when its route was current.
func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// inStatement is the channel ch an enqueue statement notifies inside a
// caller's transaction, so that the NOTIFY goes out when it commits; none
// otherwise (the notifier sends it, see notify.go).
func (c *enqueueCall) inStatement(ch string) string {
	if c.idb != nil {
		return ch
	}
	return ""
}

// inStatementAll is inStatement for the channels of every queue of rt.
func (c *enqueueCall) inStatementAll(rt *route) []string {
	if c.idb != nil {
		return rt.chans
	}
	return []string{}
}

// execer is what the hot path runs its constant SQL on: *sql.DB, *sql.Tx
// or *sql.Conn (not bun's wrappers, which render arguments into the text).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs f, a write whose outcome the caller must learn truthfully, on
// ex. A connection is taken with ctx, so that a canceled ctx or an
// unreachable database stops the call before anything is sent; once sent,
// the statement is awaited even if ctx ends (up to
// Options.StatementTimeout), because pgx cancels the wait for the reply,
// not the statement: giving up early could report a failure for a row that
// was committed. The inbox's claims use it; enqueues use enqWrite, which
// returns when ctx ends (in doubt).
func (ps *store) write(ctx context.Context, ex execer, f func(context.Context, execer) error) error {
	if db, ok := ex.(*sql.DB); ok {
		cctx, cancel := ps.stmtCtx(ctx)
		conn, err := db.Conn(cctx)
		cancel()
		if err != nil {
			return ps.closedErr(err)
		}
		defer conn.Close()
		ex = conn
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, cancel := ps.stmtCtx(context.WithoutCancel(ctx))
	defer cancel()
	return ps.closedErr(f(sctx, ex))
}

// enqWrite is write for an enqueue: in a caller's transaction, the
// statement runs with ctx (bounded by Options.StatementTimeout), so that
// pgx cancels it when ctx ends; the failed statement aborts the
// transaction, which can then not commit: its outcome is not in doubt.
// On the pool, once the statement is sent, the call returns when ctx ends
// with ctx's error wrapping ErrOutcomeUnknown (see inDoubt), while the
// statement goes on, up to Options.StatementTimeout, on a goroutine of
// its own: one is started only for a ctx that can end.
func (ps *store) enqWrite(ctx context.Context, ex execer, f func(context.Context, execer) error) error {
	db, own := ex.(*sql.DB)
	if !own {
		if err := ctx.Err(); err != nil {
			return err
		}
		sctx, cancel := ps.stmtCtx(ctx)
		defer cancel()
		return ps.closedErr(f(sctx, ex))
	}
	if ctx.Done() == nil {
		return ps.write(ctx, ex, f)
	}
	cctx, cancel := ps.stmtCtx(ctx)
	conn, err := db.Conn(cctx)
	cancel()
	if err != nil {
		return ps.closedErr(err)
	}
	if err := ctx.Err(); err != nil {
		conn.Close()
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer conn.Close()
		sctx, cancel := ps.stmtCtx(context.WithoutCancel(ctx))
		defer cancel()
		done <- ps.closedErr(f(sctx, conn))
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // answered meanwhile
			return err
		default:
		}
		return inDoubt(ctx)
	}
}

// inDoubt is the error of an enqueue whose ctx ended after its statement
// was sent: ctx's error wrapping ErrOutcomeUnknown.
func inDoubt(ctx context.Context) error {
	return fmt.Errorf("%w (%w)", ctx.Err(), ErrOutcomeUnknown)
}

// committed tells the consumers of st about a message just committed
// outside a caller's transaction: this PubSub's at once, other processes'
// through the notifier. A message in a caller's transaction is announced
// by the NOTIFY in its statement, on commit.
func (st *topicState) committed(ch string) {
	st.wake()
	st.ps.notifyLater(ch)
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

// enqReq is one call's rows, waiting for or in a statement.
type enqReq struct {
	data   [][]byte
	at     time.Time // zero: now
	header string    // of every row: a JSON object, "" if none
	size   int       // bytes of data and headers
	state  enqState  // guarded by the enqGroup's mu
	err    error     // the outcome, set before state becomes enqDone
	ready  chan struct{}
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
	calls   int // grouped calls inside insert: queued, leading or awaiting an outcome
	peers   int // calls when the last statement ended: the leader's gathering target
}

// insert adds r's rows to the topic, sharing a statement with concurrent
// calls on t, and returns once they are committed (nil) or not added (an
// error).
func (p *publisher) insert(ctx context.Context, r *enqReq) error {
	if len(r.data) > maxCallRows || r.size > maxGroupBytes {
		ps := p.pub.ps
		rt, err := p.pub.route(ctx) // before the connection: see lead
		if err != nil {
			return err
		}
		err = ps.enqWrite(ctx, ps.sqldb, func(ctx context.Context, ex execer) (err error) {
			rt, err = p.insertRows(ctx, ex, rt, []*enqReq{r})
			if err == nil {
				rt.committed()
			}
			return err
		})
		return err
	}
	g := &p.enq
	g.mu.Lock()
	g.calls++
	defer g.left()
	if g.leaders < enqueueStatements {
		g.leaders++
		g.mu.Unlock()
		return p.lead(ctx, r)
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
		return p.lead(ctx, r)
	case enqTaken: // ctx ended first: the statement goes on without this call
		g.mu.Unlock()
		select {
		case <-r.ready: // answered meanwhile
		default:
			return inDoubt(ctx)
		}
	default:
		g.mu.Unlock()
	}
	return r.err
}

// lead runs a statement with r's rows and the queued calls it can take,
// then hands its place to the next queued call.
//
// Nothing it waits for while it holds its connection needs another one or
// another call: the route (whose first look-up creates the topic's ready
// table, on the pool) is read and the callers of the last statement are
// gathered before the connection is taken; a route read anew during the
// statement is read on that connection (reroute). A leader holding a
// connection while it waited for a second one could, with as many leaders
// as the pool has connections, hold them all until StatementTimeout.
func (p *publisher) lead(ctx context.Context, r *enqReq) error {
	ps := p.pub.ps
	rt, err := p.pub.route(ctx)
	if err != nil {
		p.enq.handOff()
		return err
	}
	p.enq.gather(ctx)
	cctx, cancel := ps.stmtCtx(ctx)
	conn, err := ps.sqldb.Conn(cctx)
	cancel()
	if err == nil && ctx.Err() != nil {
		conn.Close()
		err = ctx.Err()
	}
	if err != nil {
		p.enq.handOff()
		return ps.closedErr(err)
	}
	group := p.enq.take(r)
	if ctx.Done() == nil {
		p.run(ctx, conn, rt, group)
		return r.err
	}
	// The statement goes on, for the group's other calls, if r's ctx
	// ends: it runs on a goroutine of its own, and r awaits it as a
	// queued call does.
	r.ready = make(chan struct{}, 1)
	go p.run(ctx, conn, rt, group)
	select {
	case <-r.ready:
		return r.err
	case <-ctx.Done():
		select {
		case <-r.ready: // answered meanwhile
			return r.err
		default:
		}
		return inDoubt(ctx)
	}
}

// run runs the statement of group, whose first call is the leader's, on
// conn, then closes conn, tells the calls their outcome and hands the
// leader's place on.
func (p *publisher) run(ctx context.Context, conn *sql.Conn, rt *route, group []*enqReq) {
	ps := p.pub.ps
	sctx, cancel := ps.stmtCtx(context.WithoutCancel(ctx))
	rt, err := p.insertRows(sctx, conn, rt, group)
	err = ps.closedErr(err)
	for _, q := range group {
		q.err = err
	}
	if len(group) > 1 && rowDependent(err) {
		// Nothing of the statement was added. The rows of one call must
		// not fail the others: each call tries again alone.
		for _, q := range group {
			var qrt *route
			if qrt, q.err = p.insertRows(sctx, conn, rt, []*enqReq{q}); q.err == nil {
				rt = qrt
			}
		}
	}
	cancel()
	conn.Close()
	for _, q := range group {
		if q.err == nil {
			rt.committed()
			break
		}
	}
	if group[0].ready != nil {
		p.enq.finish(group)
	} else {
		p.enq.finish(group[1:])
	}
	p.enq.handOff()
}

// left counts a grouped call's return from insert.
func (g *enqGroup) left() {
	g.mu.Lock()
	g.calls--
	g.mu.Unlock()
}

// enqGather bounds how long a leader waits for the calls of the last
// statement to come back before it takes the queue (see gather).
const enqGather = 50 * time.Microsecond

// gather lets the callers of the last statement join the next one. When a
// statement ends, its callers return to their code and most producers call
// again at once, while the next leader is already taking the queue: without
// a wait, concurrent producers split into two cohorts that take turns, each
// statement holding about half of them, and each commit costing a WAL
// flush. So a leader that finds fewer calls queued than there were calls
// when the last statement ended yields the processor (runtime.Gosched, so
// that the returning callers run and queue) until they are queued, for up
// to enqGather, or until ctx ends. A lone producer (peers 1) never waits.
// A timer is not used: the runtime sleeps at least a millisecond for a
// shorter one when the process is otherwise idle.
func (g *enqGroup) gather(ctx context.Context) {
	g.mu.Lock()
	want := g.peers - 1 // the leader is not queued
	n := len(g.queue)
	g.mu.Unlock()
	if n >= want {
		return
	}
	start := time.Now()
	for n < want && ctx.Err() == nil && time.Since(start) < enqGather {
		runtime.Gosched()
		g.mu.Lock()
		n = len(g.queue)
		g.mu.Unlock()
	}
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

// finish tells the calls of group that their outcome is known, and notes
// how many calls are in insert at that moment (gather's target).
func (g *enqGroup) finish(group []*enqReq) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peers = g.calls
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

// insertRows inserts the rows of group in one statement, in order, on the
// topic's route rt, read again on ex, the connection the caller holds,
// while it changes (see enqueueCall.publish); it returns the route used.
// (Why INSERT … unnest rather than COPY, and [][]byte rather than
// pgtype.FlatArray: docs/design/dbpubsub.md, "Enqueue".)
func (p *publisher) insertRows(ctx context.Context, ex execer, rt *route, group []*enqReq) (*route, error) {
	if rt == nil { // after a failed statement of lead's: the route kept now, else read on ex
		if rt = p.pub.rt.Load(); rt == nil {
			var err error
			if rt, err = p.pub.reroute(ctx, ex, ex); err != nil {
				return nil, err
			}
		}
	}
	return p.pub.onRoute(ctx, ex, ex, rt, func(rt *route) (bool, error) { return p.insertOn(ctx, ex, rt, group) })
}

// insertOn runs insertRows's statement on rt and reports whether rt was
// current.
func (p *publisher) insertOn(ctx context.Context, ex execer, rt *route, group []*enqReq) (bool, error) {
	stmts := &p.pub.ps.stmts
	rows, delayed := 0, false
	for _, q := range group {
		rows += len(q.data)
		delayed = delayed || !q.at.IsZero()
	}
	if m := rt.own; m != nil {
		switch name, h := rt.names[0], group[0].header; {
		case rows == 1 && !delayed:
			return affected(ex.ExecContext(ctx, m.stmts.insert, name, group[0].data[0], rt.version, headerArg(h)))
		case rows == 1:
			return affected(ex.ExecContext(ctx, stmts.insertAt, name, group[0].data[0], group[0].at, rt.version, headerArg(h)))
		case len(group) == 1 && !delayed:
			return affected(ex.ExecContext(ctx, m.many(rows, false), name, group[0].data, rt.version, headerArgs(group, rows)))
		}
	}
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
	headers := headerArgs(group, rows)
	switch {
	case rt.own != nil && delayed:
		return affected(ex.ExecContext(ctx, stmts.insertManyAt, rt.names[0], data, at, rt.version, headers))
	case rt.own != nil:
		return affected(ex.ExecContext(ctx, rt.own.many(rows, false), rt.names[0], data, rt.version, headers))
	case delayed:
		return affected(ex.ExecContext(ctx, stmts.fanAt, p.pub.topic, rt.version, rt.names, data, at, []string{}, headers))
	}
	return affected(ex.ExecContext(ctx, rt.fanNowFor(rows), p.pub.topic, rt.version, rt.names, data, []string{}, headers))
}
