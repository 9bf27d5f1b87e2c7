package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/batch"
	"github.com/conveyorgo/conveyor/internal/failhook"
	"github.com/conveyorgo/conveyor/internal/service"
	"github.com/conveyorgo/conveyor/pubsub"
)

// PubSub is the PostgreSQL backend. Create it with New; stop it with Close.
// It is safe for concurrent use, and any number of PubSubs, in any number of
// processes, can share one table.
type PubSub struct {
	db    *bun.DB
	sqldb *sql.DB
	opts  Options
	stmts statements

	qualified atomic.Pointer[string]     // schema.table, once looked up (state.go)
	ids       atomic.Pointer[idSequence] // the message table's id sequence, once looked up

	mu       sync.RWMutex
	isClosed bool
	topics   map[string]*topicState
	ops      sync.WaitGroup // calls in flight for callers (begin, end)

	// The background loops, in the two stages Close stops them in: loops
	// (the listener, the fetchers, the rescuer, the pruner and the
	// analyses) read and claim; writers (the lanes of the settle and
	// notify queues) write what callers asked for, up to the end.
	loops   *service.Group
	writers *service.Group
	ctx     context.Context    // of background statements: canceled CloseTimeout into Close
	cancel  context.CancelFunc // cancels ctx

	settles  *batch.Queue[*settleReq] // settle.go
	pace     settlePace               // settle.go: when a settle lane lingers
	notifies *batch.Queue[string]     // notify.go: channels to NOTIFY
	listener *listener                // listen.go; nil with Options.NoListen
	young    youngTable               // maintenance.go

	closeOnce sync.Once
	fails     *failhook.Reporter // Options.OnFailure's
}

var _ pubsub.PubSub = (*PubSub)(nil)

// New returns a PubSub storing its messages in db, in the table made by
// migrations.Migrate, or an error naming the first field of opts that makes
// no sense. It does not touch the database: a schema that is not migrated
// is reported by the first Enqueue or Dequeue.
//
// db stays the caller's: Close does not close it. Its database/sql driver
// must be github.com/jackc/pgx/v5/stdlib (see Open) unless
// Options.ListenDSN is set.
func New(db *bun.DB, opts Options) (*PubSub, error) {
	if db == nil {
		return nil, errors.New("dbpubsub: New: nil *bun.DB")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ps := &PubSub{
		fails:   failhook.New(o.OnFailure),
		db:      db,
		sqldb:   db.DB,
		opts:    o,
		stmts:   newStatements(o.Table),
		topics:  make(map[string]*topicState),
		loops:   service.NewGroup(),
		writers: service.NewGroup(),
	}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	ps.young.next.Store(youngFirstAnalyze)
	ps.pace.kick = make(chan struct{}, 1)
	ps.settles = newSettleQueue(ps)
	ps.notifies = newNotifyQueue(ps)
	// Every process rescues expired leases, whichever process had them;
	// concurrent rescuers skip each other's rows (SKIP LOCKED).
	ps.loops.Go(ps.every(o.RescueInterval, "rescue of expired leases", func(ctx context.Context) error {
		_, err := ps.Rescue(ctx)
		return err
	}))
	if o.PruneInterval > 0 {
		ps.loops.Go(ps.every(o.PruneInterval, "pruning of finished messages", func(ctx context.Context) error {
			_, err := ps.Prune(ctx)
			return err
		}))
	}
	ps.loops.Go(ps.analyzeStale)
	if !o.NoListen {
		ps.listener = newListener(ps)
		ps.loops.Go(ps.listener.run)
	}
	return ps, nil
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
func (ps *PubSub) DB() *bun.DB { return ps.db }

// Topic returns a handle on the topic name. Handles on one name share its
// messages (and, within this PubSub, its claimed rows); closing a handle
// does not affect the others. A name that pubsub.ValidateTopicName rejects
// gives a handle whose methods all return that error.
func (ps *PubSub) Topic(name string) pubsub.Topic {
	if bad := backend.CheckTopicName("dbpubsub", name); bad != nil {
		return bad
	}
	return ps.topic(name)
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
func (ps *PubSub) Close() error {
	err := fmt.Errorf("dbpubsub: %w", pubsub.ErrClosed)
	ps.closeOnce.Do(func() {
		err = nil
		ps.mu.Lock()
		ps.isClosed = true
		states := make([]*topicState, 0, len(ps.topics))
		for _, st := range ps.topics {
			states = append(states, st)
		}
		ps.mu.Unlock()

		timeout := time.AfterFunc(ps.opts.CloseTimeout, ps.cancel)
		defer timeout.Stop()
		ps.loops.Stop()
		for _, st := range states {
			st.releaseAll()
		}
		ps.ops.Wait()
		_ = ps.notifies.Wait(ps.ctx)
		ps.writers.Stop()
		ps.cancel()
		ps.fails.Close()
	})
	return err
}

// Shutdown closes ps, as Close does; it lets a dependency injector stop
// it. When ctx ends first, what Close still waits for is canceled at once
// (the calls in flight fail with pubsub.ErrClosed).
func (ps *PubSub) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, ps.cancel)
	defer stop()
	return ps.Close()
}

// begin registers a call in flight for a caller; Close waits for it. It
// fails once the PubSub is closed.
func (ps *PubSub) begin() error {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if ps.isClosed {
		return pubsub.ErrClosed
	}
	ps.ops.Add(1)
	return nil
}

func (ps *PubSub) end() { ps.ops.Done() }

// done is closed once Close has begun.
func (ps *PubSub) done() <-chan struct{} { return ps.loops.Stopping() }

func (ps *PubSub) closing() bool { return ps.loops.IsStopping() }

// backoff is the wait between retries of a failing background statement.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	switch {
	case b.d == 0:
		b.d = 100 * time.Millisecond
	case b.d < 5*time.Second:
		b.d *= 2
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }

// ctxErr puts ctx's error first when ctx has ended, so callers can match
// context.Canceled and context.DeadlineExceeded; err stays matchable too.
// stmtCtx bounds one statement (or one connection's acquisition, with
// pgx's ping of a reused connection) by Options.StatementTimeout, within
// ctx, and by Close (ps.ctx, canceled CloseTimeout into Close or when
// Shutdown's ctx ends): a server or network that stops answering fails
// it, pgx closes its connection and database/sql discards it, instead of
// the goroutine waiting forever. Every statement dbpubsub sends runs under
// one.
func (ps *PubSub) stmtCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithTimeout(ctx, ps.opts.StatementTimeout)
	stop := context.AfterFunc(ps.ctx, cancel)
	return sctx, func() {
		stop()
		cancel()
	}
}

// closedErr wraps err, the error of a caller's write, with pubsub.ErrClosed
// when Close ended it: its outcome is then unknown.
func (ps *PubSub) closedErr(err error) error {
	if err != nil && ps.ctx.Err() != nil {
		return fmt.Errorf("%w: the PubSub closed while the statement ran (it may have committed): %w", pubsub.ErrClosed, err)
	}
	return err
}

func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}
