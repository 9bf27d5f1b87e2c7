package dbpubsub

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// topicState is what the handles on one topic name share within a PubSub:
// what the topic's statements need from the database (looked up once), the
// rows claimed for its consumers, the Dequeue calls waiting for them, and
// the fetcher that claims them (fetcher.go).
type topicState struct {
	ps    *store
	name  string // the queue: the topic's name for its default subscription (see queueName)
	topic string // the topic the queue belongs to
	sub   string // the subscription the queue holds the copies of

	meta     atomic.Pointer[topicMeta] // once looked up
	rt       atomic.Pointer[route]     // on a default subscription's state: where the topic's publishes go (subscription.go)
	declared atomic.Bool               // the subscription is known to exist (subscription.go)
	dropped  atomic.Int64              // counts the deletions of the subscription: a claim across one drops its rows

	mu       sync.Mutex
	buf      []*delivery // claimed, not handed out, oldest first
	waiters  []*waiter   // Dequeue calls waiting, first come first served
	lastWant time.Time   // when a Dequeue call last looked

	demand  chan struct{} // cap 1: the waiters changed (poke)
	startMu sync.Mutex
	started bool
	readyMu sync.Mutex
	ready   chan struct{} // closed when a message may have become ready (wake)

	floor claimFloor // owned by the fetcher
	pause pauseState // pause.go
}

// waiter is a Dequeue call waiting for a row. The fetcher sends it one row
// (never blocking: cap 1) when it takes it off the waiters list.
type waiter struct{ ch chan *delivery }

// state returns the state of the queue of subscription sub of topic.
func (ps *store) state(topic, sub string) *topicState {
	name := queueName(topic, sub)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	st, ok := ps.topics[name]
	if !ok {
		st = &topicState{ps: ps, name: name, topic: topic, sub: sub, demand: make(chan struct{}, 1), ready: make(chan struct{})}
		ps.topics[name] = st
	}
	return st
}

// queueName is the queue of subscription sub of topic in the message and
// ready tables (migration 0005): the topic's name for the default
// subscription, so that a plain queue's rows are as before subscriptions
// existed; else the topic's name, U+001F (which no valid topic name
// contains) and sub.
func queueName(topic, sub string) string {
	if sub == pubsub.DefaultSubscription {
		return topic
	}
	return topic + queueSep + sub
}

const queueSep = "\x1f"

// label names the queue in errors (backend.Label).
func (st *topicState) label() string { return backend.Label(st.topic, st.sub) }

// wakeLocal wakes this PubSub's consumers of topic name, if it has any.
func (ps *store) wakeLocal(name string) {
	ps.mu.RLock()
	st := ps.topics[name]
	ps.mu.RUnlock()
	if st != nil {
		st.wake()
	}
}

// take returns a buffered row, or else registers the caller as a waiter.
func (st *topicState) take() (*delivery, *waiter) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lastWant = time.Now()
	if len(st.buf) > 0 && !st.pause.on.Load() {
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
	} else if d := <-w.ch; d != goneDelivery {
		st.buf = slices.Insert(st.buf, 0, d)
	}
	st.mu.Unlock()
	st.poke()
}

// deliver hands claimed rows to the waiters, in order, and buffers the
// rest; it gives them back if the queue was paused meanwhile (pause.go).
func (st *topicState) deliver(rows []*delivery) {
	st.mu.Lock()
	if st.pause.on.Load() {
		st.mu.Unlock()
		st.release(rows)
		return
	}
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
	st.mu.Unlock()
}

// wanted says how many rows to claim: one per waiter plus prefetch, up to
// Options.ClaimBatch buffered; and how many rows are buffered and how many
// calls wait.
func (st *topicState) wanted(prefetch int) (n, buffered, waiting int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	waiting, buffered = len(st.waiters), len(st.buf)
	if waiting > 0 {
		n = min(waiting+prefetch, st.ps.opts.ClaimBatch) - buffered
	}
	return n, buffered, waiting
}

// The two signals a fetcher waits for. wake: a message may have become
// ready (an enqueue, a notification, a nack, a rescue). poke: the demand
// changed (a Dequeue call came or left).

func (st *topicState) wake() {
	st.readyMu.Lock()
	close(st.ready)
	st.ready = make(chan struct{})
	st.readyMu.Unlock()
}

// readyChan is closed by the next wake.
func (st *topicState) readyChan() <-chan struct{} {
	st.readyMu.Lock()
	defer st.readyMu.Unlock()
	return st.ready
}

func (st *topicState) poke() {
	select {
	case st.demand <- struct{}{}:
	default:
	}
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

// channel returns the topic's notification channel (see lookup).
func (st *topicState) channel(ctx context.Context) (string, error) {
	m, err := st.lookup(ctx)
	if err != nil {
		return "", err
	}
	return m.ch, nil
}

// lookup returns st's topicMeta, looking it up once, which creates the
// topic's ready table on the topic's first use in the database. It wraps
// migrations.ErrNotMigrated when the schema lacks the message table or
// migration 0003.
func (st *topicState) lookup(ctx context.Context) (*topicMeta, error) {
	return st.lookupOn(ctx, st.ps.sqldb)
}

// lookupOn is lookup with its statements sent on db: the pool, or the
// connection a caller already holds, so that it never waits for a second
// one from the pool while holding one (a pool of n connections held by n
// such callers would wait for each other until StatementTimeout).
func (st *topicState) lookupOn(ctx context.Context, db execer) (*topicMeta, error) {
	if m := st.meta.Load(); m != nil {
		return m, nil
	}
	ps := st.ps
	q, err := ps.qualifiedTableOn(ctx, db)
	if err != nil {
		return nil, err
	}
	// The function is created in the message table's schema. No lock
	// while querying, as in qualifiedTable: concurrent look-ups find the
	// same table.
	schema := quoteIdent(q[:strings.LastIndexByte(q, '.')])
	fn, table := schema+"."+quoteIdent(migrations.ReadyTableFunc(ps.opts.Table)), schema+"."+quoteIdent(ps.opts.Table)
	var ready string
	sctx, cancel := ps.stmtCtx(ctx)
	err = db.QueryRowContext(sctx, "SELECT "+fn+"($1)", st.name).Scan(&ready)
	cancel()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42883" { // undefined_function
		return nil, migrations.NotMigratedError(ps.opts.Table, "lacks migration 0003 (a ready table per topic)")
	}
	if err != nil {
		return nil, fmt.Errorf("look up the ready table of %s: %w", st.label(), err)
	}
	seq, err := ps.idSeq(ctx, db, table)
	if err != nil {
		return nil, err
	}
	m := &topicMeta{ch: channelName(q, st.name), ready: ready, block: seq.increment,
		stmts: newReadyStatements(ps.opts.Table, ready, seq.name)}
	st.meta.Store(m)
	return m, nil
}

// qualifiedTable returns the schema-qualified name of the message table,
// looking it up once. It wraps migrations.ErrNotMigrated when the table
// does not exist, or lacks migration 0007 (every statement that writes or
// claims messages names its headers column), 0008 (every claim reads
// the paused table) or 0009 (the rescue reads the subscriptions' retry
// policies).
func (ps *store) qualifiedTable(ctx context.Context) (string, error) {
	return ps.qualifiedTableOn(ctx, ps.sqldb)
}

// qualifiedTableOn is qualifiedTable with its statement sent on db (see
// lookupOn).
func (ps *store) qualifiedTableOn(ctx context.Context, db execer) (string, error) {
	if q := ps.qualified.Load(); q != nil {
		return *q, nil
	}
	// No lock while querying: callers give up with their own ctx, and
	// concurrent look-ups find the same answer.
	var q string
	var headers, paused, retry bool
	sctx, cancel := ps.stmtCtx(ctx)
	err := db.QueryRowContext(sctx, ps.stmts.resolve, quoteIdent(ps.opts.Table), migrations.PausedTable(ps.opts.Table),
		migrations.SubscriptionsTable(ps.opts.Table)).Scan(&q, &headers, &paused, &retry)
	cancel()
	if errors.Is(err, sql.ErrNoRows) {
		return "", migrations.NotMigratedError(ps.opts.Table, "is missing")
	}
	if err != nil {
		return "", fmt.Errorf("look up table %q: %w", ps.opts.Table, err)
	}
	if !headers {
		return "", migrations.NotMigratedError(ps.opts.Table, "lacks migration 0007 (message headers)")
	}
	if !paused {
		return "", migrations.NotMigratedError(ps.opts.Table, "lacks migration 0008 (paused queues)")
	}
	if !retry {
		return "", migrations.NotMigratedError(ps.opts.Table, "lacks migration 0009 (subscription retry policies)")
	}
	ps.qualified.Store(&q)
	return q, nil
}

// idSequence is the message table's id sequence: its schema-qualified,
// quoted name, and its increment, how many ids one nextval reserves
// (migration 0004).
type idSequence struct {
	name      string
	increment int64
}

// idSeq returns the message table's id sequence, looking it up once per
// PubSub, on db (see lookupOn); table is the table's schema-qualified,
// quoted name.
func (ps *store) idSeq(ctx context.Context, db execer, table string) (*idSequence, error) {
	if s := ps.ids.Load(); s != nil {
		return s, nil
	}
	// No lock while querying, as in qualifiedTable.
	var s idSequence
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	if err := db.QueryRowContext(sctx, ps.stmts.sequence, table).Scan(&s.name, &s.increment); err != nil {
		return nil, fmt.Errorf("look up the id sequence of table %s: %w", table, err)
	}
	ps.ids.Store(&s)
	return &s, nil
}

// channelPrefix starts every notification channel of dbpubsub.
const channelPrefix = "conveyor_"

// channelName is the LISTEN/NOTIFY channel of topic in the table whose
// schema-qualified name is qualified. Channels are per database, not per
// schema, so the schema is part of it; it is hashed to stay within 63
// bytes. The rescue statement computes the same in SQL.
func channelName(qualified, topic string) string {
	sum := md5.Sum([]byte(qualified + ":" + topic))
	return channelPrefix + hex.EncodeToString(sum[:])
}

// reportFetch reports a claim of the queue that failed and is retried
// (Options.OnFailure), or calls log without a hook.
func (st *topicState) reportFetch(err error, log func()) {
	st.ps.report(pubsub.Failure{Kind: pubsub.FetchRetried, Topic: st.topic, Subscription: st.sub, Err: err}, log)
}

// reportDead reports message id of subscription sub of topic dead
// (Options.OnFailure).
func (ps *store) reportDead(topic, sub string, id int64, attempt int, cause pubsub.DeadCause, reason string) {
	f := pubsub.Failure{Kind: pubsub.Dead, Cause: cause, Topic: topic, Subscription: sub,
		MessageID: strconv.FormatInt(id, 10), Attempt: attempt}
	if reason != "" {
		f.Err = errors.New(reason)
	}
	ps.report(f, nil)
}

// report hands f to the engine's failure hook (Options.OnFailure), or,
// without one, calls log.
func (ps *store) report(f pubsub.Failure, log func()) {
	if ps.opts.OnFailure == nil {
		if log != nil {
			log()
		}
		return
	}
	ps.env.Report(f)
}
