package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// pkg starts every error of the package.
const pkg = "dbpubsub"

// PubSub is the PostgreSQL backend: conveyor's engine over the store of
// this package. Create it with New; stop it with Close. It is safe for
// concurrent use, and any number of PubSubs, in any number of processes,
// can share one table.
type PubSub struct {
	*engine.PubSub
	s *store
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
	_ admin.TopicLister = (*PubSub)(nil)
)

// New returns a PubSub storing its messages in db, in the table made by
// migrations.Migrate, or an error naming the first field of opts that makes
// no sense. It does not touch the database: a schema that is not migrated
// is reported by the first Enqueue or Dequeue.
//
// db stays the caller's: Close does not close it. Its database/sql driver
// must be github.com/jackc/pgx/v5/stdlib (see Open) unless
// Options.ListenDSN is set.
func New(db *bun.DB, opts Options) (*PubSub, error) {
	return newObserved(db, opts, nil)
}

// newObserved is New with the observer an instrumentation registered in
// the injector (engine.RegisteredObserver), nil if none.
func newObserved(db *bun.DB, opts Options, observe func(*engine.PubSub) engine.Observer) (*PubSub, error) {
	if db == nil {
		return nil, errors.New("dbpubsub: New: nil *bun.DB")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newStore(db, o)
	e, err := engine.New(s, engine.Options{
		Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, OnFailure: o.OnFailure, Named: true, Observe: observe,
	})
	if err != nil {
		return nil, err
	}
	return &PubSub{PubSub: e, s: s}, nil
}

// Open opens a *bun.DB configured for dbpubsub: database/sql over
// github.com/jackc/pgx/v5/stdlib, the PostgreSQL dialect, and a pool of
// max(8, 4×GOMAXPROCS) connections. It does not connect; the first query
// does. The caller closes it, after closing the PubSubs that use it.
func Open(dsn string) (*bun.DB, error) {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return nil, fmt.Errorf("dbpubsub: open: %w", err)
	}
	sqldb, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("dbpubsub: open: %w", err)
	}
	n := max(8, 4*runtime.GOMAXPROCS(0))
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	sqldb.SetConnMaxLifetime(time.Hour)
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

// DB returns the *bun.DB the PubSub stores its messages in.
func (ps *PubSub) DB() *bun.DB { return ps.s.db }

// Topic returns a handle on the default subscription of the topic name:
// its enqueues publish to the topic, its Dequeue, dead letters and stats
// are the subscription's. Handles on one name share its messages (and,
// within this PubSub, its claimed rows); closing a handle does not affect
// the others. A name that pubsub.ValidateTopicName rejects gives a handle
// whose methods all return that error.
//
// Besides pubsub.Topic a handle has every optional ability of packages
// pubsub and admin, and names its topic and subscription (Name,
// Subscription). Every enqueue runs in the caller's transaction when ctx
// carries one (pubsub.WithTx). An enqueue returns when its rows are
// committed (or, in a caller's transaction, written in it); concurrent
// enqueues on one handle share statements. One whose ctx ends after its
// statement was sent returns then, in doubt (ErrOutcomeUnknown): retry it
// idempotently (EnqueueUnique, or a consumer that claims). EnqueueAt's
// time is the database's clock; EnqueueBatch is one statement, all or
// none; EnqueueUnique adds nothing while the topic keeps a message under
// its key, until it is pruned (Options.Retention). Ack returns once queued
// for the next grouped statement (see Options.ConfirmAck and
// PubSub.Flush).
func (ps *PubSub) Topic(name string) pubsub.Topic { return ps.PubSub.Topic(name) }

// Subscribe creates subscription sub of topic unless it exists, for every
// process on the database, and returns a handle on it: its Dequeue reads
// sub's copies, its enqueues publish to topic, its dead letters and stats
// are sub's (see pubsub.Subscriber). It creates the subscription's ready
// table too.
func (ps *PubSub) Subscribe(ctx context.Context, topic, sub string) (pubsub.Topic, error) {
	return ps.PubSub.Subscribe(ctx, topic, sub)
}

// DeleteSubscription deletes subscription sub of topic and every copy its
// queue keeps (pending, scheduled, processing, dead, and finished), with
// its inbox keys, in one transaction. Deliveries of it in hand then fail
// to settle with pubsub.ErrLeaseExpired, and the Dequeue calls of its
// handles, in this process or another, return pubsub.ErrNoSubscription
// until it is created again (those waiting in another process within
// about Options.PollInterval); the default subscription's handles read a
// new default. It wraps pubsub.ErrNoSubscription when topic has no
// subscription sub.
func (ps *PubSub) DeleteSubscription(ctx context.Context, topic, sub string) error {
	return ps.PubSub.DeleteSubscription(ctx, topic, sub)
}

// Close stops the PubSub: every topic handle returns pubsub.ErrClosed from
// then on, blocked calls return, and the goroutines it started have ended
// when Close returns. Rows claimed but not yet handed to a consumer are
// given back; deliveries already handed out can no longer be settled here
// and come back when their lease runs out. Statements in flight get
// Options.CloseTimeout to finish. The *bun.DB is not closed. A second Close
// returns pubsub.ErrClosed.
//
// The order: no new call is taken; the loops that read stop (the
// listener, the fetchers, the rescuer, the pruner); the rows they claimed
// and never handed out are given back; the calls in flight end (queued
// asynchronous acks are written); the notifications still due are sent;
// the writers stop.
func (ps *PubSub) Close() error { return ps.PubSub.Close() }

// Shutdown closes ps, as Close does; it lets a dependency injector stop
// it. When ctx ends first, what Close still waits for is canceled at once
// (the calls in flight fail with pubsub.ErrClosed).
func (ps *PubSub) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, ps.s.cancel)
	defer stop()
	return ps.Close()
}

// Flush returns once the acks queued before the call (see
// Options.ConfirmAck) are written to the database (or failed, which is
// logged), or when ctx ends. With ConfirmAck there is nothing to wait
// for. Stats, ListDead and the other reads of a topic flush first, so they
// see this PubSub's acks.
func (ps *PubSub) Flush(ctx context.Context) error { return ps.s.Flush(ctx) }

// Rescue makes the messages whose lease ran out (on every topic of the
// table) ready again at once, counting the attempt they used, or dead when
// their attempts are exhausted by this PubSub's retry policy. It returns the
// topics that got messages back. Every PubSub runs it periodically; call it
// to rescue now.
func (ps *PubSub) Rescue(ctx context.Context) ([]string, error) { return ps.s.Rescue(ctx) }

// Prune deletes the finished (acked) rows older than Options.Retention and
// the dead rows that died longer than Options.DeadRetention ago (unless it
// is negative), of every topic, and says how many it deleted; then the
// inbox claims older than Options.Retention. Every PubSub runs it every
// Options.PruneInterval.
func (ps *PubSub) Prune(ctx context.Context) (int64, error) { return ps.s.Prune(ctx) }
