package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/batch"
	"github.com/conveyorgo/conveyor/internal/service"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// store is dbpubsub's driver.Store: the message table and its ready
// tables, the fetchers that claim rows for this process's consumers, the
// settle and notify queues that write what they ask for, the listener, and
// the background loops (rescue, prune, analyses). The engine (PubSub's)
// checks every call before it reaches the store.
type store struct {
	db    *bun.DB
	sqldb *sql.DB
	opts  Options
	stmts statements
	env   driver.Env

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
	sender   string                   // notify.go: the payload of the notifier's rounds, this store's own
	listener *listener                // listen.go; nil with Options.NoListen
	young    youngTable               // maintenance.go
}

var (
	_ driver.Store         = (*store)(nil)
	_ driver.Subscriptions = (*store)(nil)
	_ driver.TopicLister   = (*store)(nil)
)

// newStore returns the store of o, whose defaults are applied; Open
// starts it.
func newStore(db *bun.DB, o Options) *store {
	ps := &store{
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
	ps.sender = newSender()
	return ps
}

// Open starts the background loops. It does not touch the database: a
// schema that is not migrated is reported by the first call that needs
// it. The store honours delays, unique keys and the caller's transaction.
func (ps *store) Open(env driver.Env) (driver.Features, error) {
	ps.env = env
	o := ps.opts
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
	return driver.Delay | driver.Unique | driver.Tx, nil
}

// Topic returns the publishing side of a handle on topic name (enqueue.go).
func (ps *store) Topic(name string) driver.Topic {
	return &publisher{pub: ps.state(name, pubsub.DefaultSubscription)}
}

// Close stops the store, in this order: no new call is taken; the loops
// that read stop (the listener, the fetchers, the rescuer, the pruner);
// the rows they claimed and never handed out are given back; the calls in
// flight end (queued asynchronous acks are written); the notifications
// still due are sent; the writers stop. Statements in flight get
// Options.CloseTimeout to finish.
func (ps *store) Close() error {
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
	return nil
}

// begin registers a call in flight for a caller; Close waits for it. It
// fails once the store is closed.
func (ps *store) begin() error {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if ps.isClosed {
		return pubsub.ErrClosed
	}
	ps.ops.Add(1)
	return nil
}

func (ps *store) end() { ps.ops.Done() }

// done is closed once Close has begun.
func (ps *store) done() <-chan struct{} { return ps.loops.Stopping() }

func (ps *store) closing() bool { return ps.loops.IsStopping() }

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
func (ps *store) stmtCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithTimeout(ctx, ps.opts.StatementTimeout)
	stop := context.AfterFunc(ps.ctx, cancel)
	return sctx, func() {
		stop()
		cancel()
	}
}

// closedErr wraps err, the error of a caller's write, with pubsub.ErrClosed
// when Close ended it: its outcome is then unknown.
func (ps *store) closedErr(err error) error {
	if err != nil && ps.ctx.Err() != nil {
		return fmt.Errorf("%w: the PubSub closed while the statement ran (it may have committed): %w", pubsub.ErrClosed, err)
	}
	return err
}

func ctxErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}
