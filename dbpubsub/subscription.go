package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Subscriptions (migration 0005). Each subscription of a topic is a queue
// of its own (queueName) in the message table and the ready tables, read
// as a topic was before subscriptions existed. A publish writes one copy
// into the queue of each subscription the topic has, or into the default
// subscription's when it has none: its route. A process keeps each topic's
// route with the version of the topic's subscriptions it was read at, and
// every publish statement checks, in its own snapshot, that the version is
// still current (guard in sql.go); when it is not, the statement writes
// nothing, and the publish reads the route again and runs anew. So a
// publish writes copies for exactly the subscriptions committed before its
// statement began, in whichever process they were created.

// maxReroutes bounds how many times one publish reads its route again; a
// topic whose subscriptions change faster than that fails the publish.
const maxReroutes = 8

// errRouteChanged is the error of a publish whose route changed more than
// maxReroutes times while it ran.
var errRouteChanged = errors.New("the subscriptions of the topic kept changing")

// route is where the publishes of a topic go, as of version.
type route struct {
	version int64
	queues  []*topicState // in subscription name order; the default subscription's when there is none
	names   []string      // the queues' names
	chans   []string      // their notification channels
	own     *topicMeta    // the queue's meta when the one queue is the default subscription's: readyStatements serve it
	fanNow  string        // else the statements for messages for now (fanNowSQL): one nextval per row
	fanMany string        // and with the ids of one block per queue
	block   int64         // the most rows fanMany takes
}

// fanNowFor returns the statement for rows messages for now on a route
// without own.
func (rt *route) fanNowFor(rows int) string {
	if int64(rows) <= rt.block {
		return rt.fanMany
	}
	return rt.fanNow
}

// route returns where st's topic's publishes go; st is the state of the
// topic's default subscription.
func (st *topicState) route(ctx context.Context) (*route, error) {
	if r := st.rt.Load(); r != nil {
		return r, nil
	}
	return st.reroute(ctx, st.ps.sqldb, st.ps.sqldb)
}

// reroute reads st's route from the database through q (the caller's
// transaction, so that it reads what the transaction's statements see, the
// connection the publish holds, or the pool), and keeps it unless a newer
// one was kept meanwhile. The first-use look-ups of the route's queues
// (lookupOn) run on meta: q itself when it is a connection the publish
// holds, so that it never waits for another while holding it; the pool
// when q is a caller's transaction, whose rollback must not undo a ready
// table the process then believes in.
func (st *topicState) reroute(ctx context.Context, q, meta execer) (*route, error) {
	ps := st.ps
	if _, err := ps.qualifiedTableOn(ctx, meta); err != nil {
		return nil, err
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	rows, err := q.QueryContext(sctx, ps.stmts.routeOf, st.topic)
	if err != nil {
		return nil, notMigrated(ps, err, "look up the subscriptions of "+st.label())
	}
	rt := &route{}
	var subs []string
	for rows.Next() {
		var name sql.NullString
		if err := rows.Scan(&rt.version, &name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("look up the subscriptions of %s: %w", st.label(), err)
		}
		if name.Valid {
			subs = append(subs, name.String)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up the subscriptions of %s: %w", st.label(), err)
	}
	rows.Close()
	if len(subs) == 0 {
		subs = []string{pubsub.DefaultSubscription}
	}
	readies := make([]string, len(subs))
	for i, sub := range subs {
		qs := ps.state(st.topic, sub)
		m, err := qs.lookupOn(ctx, meta)
		if err != nil {
			return nil, err
		}
		rt.queues = append(rt.queues, qs)
		rt.names = append(rt.names, qs.name)
		rt.chans = append(rt.chans, m.ch)
		readies[i] = m.ready
		if qs == st && len(subs) == 1 {
			rt.own = m
		}
	}
	if rt.own == nil {
		seq := ps.ids.Load() // looked up with the queues' meta
		rt.fanNow = fanNowSQL(ps.opts.Table, seq.name, readies, false)
		rt.fanMany = fanNowSQL(ps.opts.Table, seq.name, readies, true)
		rt.block = seq.increment
	}
	for {
		old := st.rt.Load()
		if old != nil && old.version > rt.version {
			return rt, nil // a transaction's older view: used, not kept
		}
		if st.rt.CompareAndSwap(old, rt) {
			return rt, nil
		}
	}
}

// onRoute runs f, one publish statement, on rt and then on the route read
// anew through ex (its look-ups on meta, see reroute) while f reports that
// the route it ran on was not current (the statement's guard: it wrote
// nothing), up to maxReroutes times; it returns the route f last ran on.
// st is the topic's default subscription.
func (st *topicState) onRoute(ctx context.Context, ex, meta execer, rt *route, f func(*route) (bool, error)) (*route, error) {
	for i := 0; ; i++ {
		ok, err := f(rt)
		if err != nil || ok {
			return rt, err
		}
		if i == maxReroutes {
			return rt, errRouteChanged
		}
		if rt, err = st.reroute(ctx, ex, meta); err != nil {
			return nil, err
		}
	}
}

// committed tells the consumers of rt's queues about messages just
// committed outside a caller's transaction (see topicState.committed).
func (rt *route) committed() {
	for i, q := range rt.queues {
		q.committed(rt.chans[i])
	}
}

// notMigrated wraps err, the error of doing what, as migrations.ErrNotMigrated
// when the tables of migration 0005 are missing.
func notMigrated(ps *store, err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%s: %w", what, migrations.NotMigratedError(ps.opts.Table, "lacks migration 0005 (subscriptions)"))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Subscribe creates subscription sub of topic unless it exists, for every
// process on the database, with its ready table and cfg's retry policy
// when it is its own (cfg.Own; migration 0009), and returns the
// subscription's configuration: the retry policy it keeps, or the
// PubSub's for one that has none (made without, on first use, or before
// migration 0009). The lease is the PubSub's.
func (ps *store) Subscribe(ctx context.Context, topic, sub string, cfg driver.SubscriptionConfig) (driver.SubscriptionConfig, error) {
	st := ps.state(topic, sub)
	r := cfg.Retry.WithDefaults()
	var own *pubsub.RetryPolicy
	if cfg.Own {
		own = &r
	}
	// A subscription this process declared already is only read: the
	// engine asks for the policy of a handle's subscription at its first
	// Nack, and a read is bounded by ctx, where a declaration, a write
	// whose outcome must be learned, is awaited up to StatementTimeout.
	if cfg.Own || !st.declared.Load() {
		if err := st.declareWith(ctx, own); err != nil {
			return driver.SubscriptionConfig{}, ctxErr(ctx, err)
		}
	}
	got := driver.SubscriptionConfig{Retry: ps.opts.Retry, Lease: ps.opts.Lease}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	var maxAttempts sql.NullInt64
	var minNS, maxNS sql.NullInt64
	var jitter sql.NullFloat64
	err := ps.sqldb.QueryRowContext(sctx, ps.stmts.subRetry, topic, sub).Scan(&maxAttempts, &minNS, &maxNS, &jitter)
	switch {
	case errors.Is(err, sql.ErrNoRows): // deleted meanwhile: what it was made with
		if cfg.Own {
			got.Retry, got.Own = r, true
		}
	case err != nil:
		return driver.SubscriptionConfig{}, ctxErr(ctx, notMigrated(ps, err, "read its retry policy"))
	case maxAttempts.Valid:
		got.Own = true
		got.Retry = pubsub.RetryPolicy{MaxAttempts: int(maxAttempts.Int64), MinBackoff: time.Duration(minNS.Int64),
			MaxBackoff: time.Duration(maxNS.Int64), Jitter: jitter.Float64}
	}
	return got, nil
}

// Subscriptions lists the subscriptions of topic, in name order.
func (ps *store) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	if _, err := ps.qualifiedTable(ctx); err != nil {
		return nil, err
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	rows, err := ps.sqldb.QueryContext(sctx, ps.stmts.listSubs, topic)
	if err != nil {
		return nil, notMigrated(ps, err, "list them")
	}
	defer rows.Close()
	subs := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return subs, nil
}

// DeleteSubscription is PubSub.DeleteSubscription.
func (ps *store) DeleteSubscription(ctx context.Context, topic, sub string) error {
	st := ps.state(topic, sub)
	m, err := st.lookup(ctx)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return ctxErr(ctx, notMigrated(ps, err, "delete it"))
	}
	ctx, cancel := ps.stmtCtx(ctx) // the whole transaction: a handful of statements
	defer cancel()
	tx, err := ps.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRowContext(ctx, ps.stmts.dropSub, topic, sub).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return pubsub.ErrNoSubscription
	}
	if err != nil {
		return fail(err)
	}
	// The ready table's lock waits for the publishes writing into it and
	// the claims moving its rows, so none of their rows stays behind.
	if _, err := tx.ExecContext(ctx, "LOCK TABLE ONLY "+m.ready+" IN EXCLUSIVE MODE"); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM ONLY "+m.ready); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, ps.stmts.dropCopies, st.name); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	if sub == pubsub.DefaultSubscription {
		// Its handles read a new default: their waiting calls wait on.
		st.declared.Store(false)
		st.dropBuffered()
	} else {
		st.gone()
	}
	ps.state(topic, pubsub.DefaultSubscription).rt.Store(nil)
	return nil
}

// goneDelivery is what a waiting Dequeue call is sent when its named
// subscription is deleted: it returns pubsub.ErrNoSubscription.
var goneDelivery = &delivery{}

// gone records that st's named subscription no longer exists, deleted by
// this process or found deleted by its fetcher: the rows buffered are
// gone with it, the Dequeue calls waiting return pubsub.ErrNoSubscription,
// and later ones look for the subscription again (consume).
func (st *topicState) gone() {
	st.declared.Store(false)
	st.dropped.Add(1)
	st.mu.Lock()
	defer st.mu.Unlock()
	clear(st.buf)
	st.buf = st.buf[:0]
	for _, w := range st.waiters {
		w.ch <- goneDelivery
	}
	clear(st.waiters)
	st.waiters = st.waiters[:0]
}

// exists reports whether st's subscription is one of its topic's.
func (st *topicState) exists(ctx context.Context) (bool, error) {
	ps := st.ps
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	var ok bool
	if err := ps.sqldb.QueryRowContext(sctx, ps.stmts.subExists, st.topic, st.sub).Scan(&ok); err != nil {
		return false, notMigrated(ps, err, "look up "+st.label())
	}
	return ok, nil
}

// dropBuffered forgets the rows st's fetcher claimed and did not hand out,
// once its subscription is deleted: their rows are gone. (Another
// process's buffer hands its rows out, and their settles fail with
// pubsub.ErrLeaseExpired.)
func (st *topicState) dropBuffered() {
	st.dropped.Add(1)
	st.mu.Lock()
	defer st.mu.Unlock()
	clear(st.buf)
	st.buf = st.buf[:0]
}

// declare creates st's subscription unless it exists (with its ready
// table), and makes this process's publishes to the topic read their
// route again.
func (st *topicState) declare(ctx context.Context) error { return st.declareWith(ctx, nil) }

// declareWith is declare of a subscription that, if it makes it, keeps
// retry as its policy (nil: none of its own).
func (st *topicState) declareWith(ctx context.Context, retry *pubsub.RetryPolicy) error {
	ps := st.ps
	if _, err := st.lookup(ctx); err != nil {
		return err
	}
	var p [4]any // NULLs without a policy
	if retry != nil {
		p = [4]any{retry.MaxAttempts, int64(retry.MinBackoff), int64(retry.MaxBackoff), retry.Jitter}
	}
	err := ps.write(ctx, ps.sqldb, func(ctx context.Context, ex execer) error {
		_, err := ex.ExecContext(ctx, ps.stmts.declare, st.topic, st.sub, p[0], p[1], p[2], p[3])
		return err
	})
	if err != nil {
		return notMigrated(ps, err, "create the subscription")
	}
	st.declared.Store(true)
	ps.state(st.topic, pubsub.DefaultSubscription).rt.Store(nil)
	return nil
}

// consume makes st's subscription one of its topic's before its first
// Dequeue in this process: consuming from the default subscription makes
// it one (pubsub's doc, "Subscriptions").
// A named subscription must exist (Subscribe): its Dequeue after it was
// deleted, here or by another process, wraps pubsub.ErrNoSubscription
// until it is created again.
func (st *topicState) consume(ctx context.Context) error {
	if st.declared.Load() {
		return nil
	}
	if st.sub == pubsub.DefaultSubscription {
		return st.declare(ctx)
	}
	if _, err := st.lookup(ctx); err != nil {
		return err
	}
	ok, err := st.exists(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return pubsub.ErrNoSubscription
	}
	st.declared.Store(true)
	return nil
}
