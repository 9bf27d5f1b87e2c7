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

	"github.com/conveyorgo/conveyor/migrations"
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

	qualified atomic.Pointer[string]     // schema.table, once looked up
	ids       atomic.Pointer[idSequence] // the message table's id sequence, once looked up

	mu       sync.RWMutex
	isClosed bool
	topics   map[string]*topicState
	ops      sync.WaitGroup // statements run for callers

	closed     chan struct{} // closed by Close
	ctx        context.Context
	cancel     context.CancelFunc // cancels background statements
	listenCtx  context.Context
	stopListen context.CancelFunc
	loops      sync.WaitGroup // fetchers, rescuer, pruner, listener, analyses
	young      youngTable
	settler    sync.WaitGroup
	settleCh   chan *settleReq
	settleStop chan struct{}
	acks       *ackQueue // Options.AsyncAck
	listener   *listener
	closeOnce  sync.Once

	notifyMu      sync.Mutex
	notifyPending map[string]struct{} // channels to NOTIFY (notify.go)
	notifyKick    chan struct{}
}

var (
	_ pubsub.PubSub = (*PubSub)(nil)
	_ pubsub.Topic  = (*Topic)(nil)
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
	if db == nil {
		return nil, errors.New("dbpubsub: New: nil *bun.DB")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ps := &PubSub{
		db:         db,
		sqldb:      db.DB,
		opts:       o,
		stmts:      newStatements(o.Table),
		topics:     make(map[string]*topicState),
		closed:     make(chan struct{}),
		settleCh:   make(chan *settleReq),
		settleStop: make(chan struct{}),
		acks:       newAckQueue(),

		notifyPending: make(map[string]struct{}),
		notifyKick:    make(chan struct{}, 1),
	}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	ps.young.next.Store(youngFirstAnalyze)
	ps.listenCtx, ps.stopListen = context.WithCancel(context.Background())
	for range settlers {
		ps.settler.Add(1)
		go ps.settleLoop()
	}
	ps.loops.Add(2)
	go ps.notifyLoop()
	// Every process rescues expired leases, whichever process had them;
	// concurrent rescuers skip each other's rows (SKIP LOCKED).
	go ps.every(o.RescueInterval, "rescue of expired leases", func(ctx context.Context) error {
		_, err := ps.Rescue(ctx)
		return err
	})
	if o.PruneInterval > 0 {
		ps.loops.Add(1)
		go ps.every(o.PruneInterval, "pruning of finished messages", func(ctx context.Context) error {
			_, err := ps.Prune(ctx)
			return err
		})
	}
	if !o.NoListen {
		ps.listener = newListener(ps)
		ps.loops.Add(1)
		go ps.listener.run()
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
	return ps.topic(name)
}

func (ps *PubSub) topic(name string) *Topic {
	if err := pubsub.ValidateTopicName(name); err != nil {
		return &Topic{err: fmt.Errorf("dbpubsub: %w", err)}
	}
	return &Topic{st: ps.state(name), closed: make(chan struct{})}
}

func (ps *PubSub) state(name string) *topicState {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	st, ok := ps.topics[name]
	if !ok {
		st = newTopicState(ps, name)
		ps.topics[name] = st
	}
	return st
}

// existingState returns the state of topic name if this PubSub has one.
func (ps *PubSub) existingState(name string) *topicState {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.topics[name]
}

// Close stops the PubSub: every topic handle returns pubsub.ErrClosed from
// then on, blocked calls return, and the goroutines it started have ended
// when Close returns. Rows claimed but not yet handed to a consumer are
// given back; deliveries already handed out can no longer be settled here
// and come back when their lease runs out. Statements in flight get
// Options.CloseTimeout to finish. The *bun.DB is not closed. A second Close
// returns pubsub.ErrClosed.
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
		close(ps.closed)
		ps.stopListen()

		// Statements in flight get CloseTimeout, then they are canceled.
		timeout := time.AfterFunc(ps.opts.CloseTimeout, ps.cancel)
		defer timeout.Stop()
		ps.loops.Wait()
		for _, st := range states {
			st.releaseAll()
		}
		ps.ops.Wait()
		close(ps.settleStop)
		ps.settler.Wait()
		ps.cancel()
	})
	return err
}

// Shutdown closes ps; it lets a dependency injector stop it.
func (ps *PubSub) Shutdown(context.Context) error { return ps.Close() }

// begin registers a statement run for a caller; Close waits for it. It
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

func (ps *PubSub) closing() bool {
	select {
	case <-ps.closed:
		return true
	default:
		return false
	}
}

// qualifiedTable returns the schema-qualified name of the message table,
// looking it up once. It wraps migrations.ErrNotMigrated when the table
// does not exist.
func (ps *PubSub) qualifiedTable(ctx context.Context) (string, error) {
	if q := ps.qualified.Load(); q != nil {
		return *q, nil
	}
	// No lock while querying: callers give up with their own ctx, and
	// concurrent look-ups find the same answer.
	var q string
	err := ps.sqldb.QueryRowContext(ctx, ps.stmts.resolve, quoteIdent(ps.opts.Table)).Scan(&q)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("dbpubsub: %w", migrations.NotMigratedError(ps.opts.Table, "is missing"))
	}
	if err != nil {
		return "", fmt.Errorf("dbpubsub: look up table %q: %w", ps.opts.Table, err)
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
// PubSub; table is the table's schema-qualified, quoted name.
func (ps *PubSub) idSeq(ctx context.Context, table string) (*idSequence, error) {
	if s := ps.ids.Load(); s != nil {
		return s, nil
	}
	// No lock while querying, as in qualifiedTable.
	var s idSequence
	if err := ps.sqldb.QueryRowContext(ctx, ps.stmts.sequence, table).Scan(&s.name, &s.increment); err != nil {
		return nil, fmt.Errorf("dbpubsub: look up the id sequence of table %s: %w", table, err)
	}
	ps.ids.Store(&s)
	return &s, nil
}

// wakeLocal wakes this PubSub's consumers of topic name, if it has any.
func (ps *PubSub) wakeLocal(name string) {
	if st := ps.existingState(name); st != nil {
		st.wake()
	}
}

// sleep waits d or until the PubSub closes; it reports whether d passed.
func (ps *PubSub) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ps.closed:
		return false
	}
}

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
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}
