package sqlitepubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/service"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// store is sqlitepubsub's driver.Store: the tables of one SQLite file.
// The engine checks every call before it reaches the store.
type store struct {
	db    *bun.DB
	sqldb *sql.DB
	opts  Options
	env   driver.Env

	// writing is the process's turn at the file's write lock: the
	// store's writes take it in turn in Go, so that they queue in order
	// rather than in SQLite's sleeping busy handler; other processes and
	// the app's own transactions are waited for by SQLite.
	writing chan struct{}

	// queue holds the ops waiting for the next group commit (group.go).
	queueMu sync.Mutex
	queue   []*op

	migrated atomic.Bool
	migrate  sync.Mutex // one migration at a time in this process

	path atomic.Pointer[string] // the file, once looked up (tx.go)

	// declared are the topics whose default subscription this process
	// made one of the topic's subscriptions (consume).
	declared sync.Map

	wakeMu sync.Mutex
	wake   chan struct{} // closed and replaced when this process makes a message due

	loops *service.Group // the rescuer and the pruner

	// calls are the calls in flight (enter); Close cancels them (closed)
	// and waits for them, so that no statement runs once it returned.
	callsMu  sync.RWMutex
	isClosed bool
	calls    sync.WaitGroup
	closed   context.Context
	cancel   context.CancelFunc
}

var (
	_ driver.Store         = (*store)(nil)
	_ driver.Subscriptions = (*store)(nil)
	_ driver.TopicLister   = (*store)(nil)
)

func newStore(db *bun.DB, o Options) *store {
	s := &store{
		db: db, sqldb: db.DB, opts: o,
		writing: make(chan struct{}, 1),
		wake:    make(chan struct{}),
		loops:   service.NewGroup(),
	}
	s.closed, s.cancel = context.WithCancel(context.Background())
	return s
}

// Open starts the rescuer and the pruner. It does not touch the file: the
// first call migrates it. The store honours delays, unique keys and the
// caller's transaction.
func (s *store) Open(env driver.Env) (driver.Features, error) {
	s.env = env
	s.loops.Go(s.every(s.opts.RescueInterval, "rescue of expired leases", s.rescue))
	if s.opts.PruneInterval > 0 {
		s.loops.Go(s.every(s.opts.PruneInterval, "pruning", s.prune))
	}
	return driver.Delay | driver.Unique | driver.Tx, nil
}

// Topic returns the store's side of the topic name.
func (s *store) Topic(name string) driver.Topic { return &topic{s: s, name: name} }

// Close stops the background loops and ends the calls waiting in Receive.
func (s *store) Close() error {
	s.loops.Stop()
	s.callsMu.Lock()
	s.isClosed = true
	s.callsMu.Unlock()
	s.cancel()
	s.calls.Wait()
	return nil
}

// enter registers a call in flight and returns its ctx, which Close
// cancels, and the func that ends it; after Close, an error wrapping
// pubsub.ErrClosed.
func (s *store) enter(ctx context.Context) (context.Context, func(), error) {
	s.callsMu.RLock()
	defer s.callsMu.RUnlock()
	if s.isClosed {
		return ctx, nil, pubsub.ErrClosed
	}
	s.calls.Add(1)
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closed, cancel)
	return cctx, func() {
		stop()
		cancel()
		s.calls.Done()
	}, nil
}

// closedErr wraps err with pubsub.ErrClosed when Close ended the call.
func (s *store) closedErr(err error) error {
	if err != nil && s.closed.Err() != nil && !errors.Is(err, pubsub.ErrClosed) {
		return fmt.Errorf("%w: %w", pubsub.ErrClosed, err)
	}
	return err
}

// done is closed once Close has begun.
func (s *store) done() <-chan struct{} { return s.loops.Stopping() }

// every runs f every d until Close, logging (or reporting) its errors.
func (s *store) every(d time.Duration, what string, f func(context.Context) error) func(<-chan struct{}) {
	return func(stop <-chan struct{}) {
		ctx, cancel := service.Context(stop)
		defer cancel()
		for service.Sleep(stop, d) {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				s.opts.Logger.Error(pkg+": "+what+" failed", "error", err)
			}
		}
	}
}

// ready makes sure the file has the schema: the first call of a store
// migrates it (Migrate).
func (s *store) ready(ctx context.Context) error {
	if s.migrated.Load() {
		return nil
	}
	s.migrate.Lock()
	defer s.migrate.Unlock()
	if s.migrated.Load() {
		return nil
	}
	if err := retryBusy(ctx, func() error { return migrate(ctx, s.sqldb) }); err != nil {
		return s.busy(ctx, err)
	}
	s.migrated.Store(true)
	return nil
}

// write runs f, the store's write, in this process's turn at the write
// lock, again while SQLite says the file is busy, until ctx ends. The
// error wraps the sentinel of its cause (classify).
func (s *store) write(ctx context.Context, f func(ctx context.Context) error) (err error) {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer func() {
		leave()
		err = s.closedErr(err)
	}()
	if err := s.ready(ctx); err != nil {
		return err
	}
	select {
	case s.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writing }()
	return s.busy(ctx, retryBusy(ctx, func() error { return f(ctx) }))
}

// busy adds ErrBusy to err, a write's error, when ctx ended it while
// another connection holds the write lock: the driver ends SQLite's wait
// for the lock with ctx's error alone.
func (s *store) busy(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrBusy) && s.locked() {
		return fmt.Errorf("%w: %w", err, ErrBusy)
	}
	return err
}

// locked reports whether another connection holds the file's write lock
// now: a BEGIN IMMEDIATE on a connection of the pool, its busy timeout 0
// for the probe, fails at once with SQLITE_BUSY.
func (s *store) locked() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c, err := s.sqldb.Conn(ctx)
	if err != nil {
		return false
	}
	defer c.Close()
	var timeout int
	if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&timeout); err != nil {
		return false
	}
	if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false
	}
	defer func() { _, _ = c.ExecContext(context.Background(), fmt.Sprintf("PRAGMA busy_timeout = %d", timeout)) }()
	_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
	if err == nil {
		_, _ = c.ExecContext(context.Background(), "ROLLBACK")
	}
	return isBusy(err)
}

// writeTx runs f in an immediate transaction on a connection of the pool,
// as write does.
func (s *store) writeTx(ctx context.Context, f func(ctx context.Context, c *sql.Conn) error) error {
	return s.write(ctx, func(ctx context.Context) error {
		c, err := s.sqldb.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		return immediate(ctx, c, func() error { return f(ctx, c) })
	})
}

// read runs f, a read, once the file has the schema.
func (s *store) read(ctx context.Context, f func(ctx context.Context) error) (err error) {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer func() {
		leave()
		err = s.closedErr(err)
	}()
	if err := s.ready(ctx); err != nil {
		return err
	}
	return retryBusy(ctx, func() error { return f(ctx) })
}

// waiter returns the channel the next wake-up closes.
func (s *store) waiter() <-chan struct{} {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	return s.wake
}

// notify wakes every consumer of this process waiting for a message.
func (s *store) notify() {
	s.wakeMu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.wakeMu.Unlock()
}

// now is the store's clock: Unix microseconds.
func now() int64 { return time.Now().UnixMicro() }

// rescue hands out again the messages whose lease ran out, in any
// process: ready at once, or dead when the attempt that ran out was the
// subscription's last (reported as a pubsub.Failure).
func (s *store) rescue(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	var exists int
	t := now()
	err := s.sqldb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM conveyor_messages WHERE state = 1 AND run_at <= ? LIMIT 1)`, t).Scan(&exists)
	if err != nil || exists == 0 {
		return classify(ctx, err)
	}
	type died struct {
		id         int64
		topic, sub string
		attempt    int
	}
	var dead []died
	var back int64
	err = s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		dead, back = dead[:0], 0
		rows, err := c.QueryContext(ctx, `UPDATE conveyor_messages AS m SET state = 3, run_at = ?1, last_error = ?2
			WHERE state = 1 AND run_at <= ?1 AND attempt >= coalesce(
				(SELECT retry_max_attempts FROM conveyor_subscriptions s WHERE s.topic = m.topic AND s.name = m.sub), ?3)
			RETURNING id, topic, sub, attempt`, t, driver.ReasonLeaseExpired, s.env.Defaults.Retry.WithDefaults().MaxAttempts)
		if err != nil {
			return err
		}
		for rows.Next() {
			var d died
			if err := rows.Scan(&d.id, &d.topic, &d.sub, &d.attempt); err != nil {
				rows.Close()
				return err
			}
			dead = append(dead, d)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		res, err := c.ExecContext(ctx, `UPDATE conveyor_messages SET state = 0, run_at = ?1 WHERE state = 1 AND run_at <= ?1`, t)
		if err != nil {
			return err
		}
		back, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if back > 0 {
		s.notify()
	}
	at := time.UnixMicro(t)
	for _, d := range dead {
		s.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: d.topic, Subscription: d.sub,
			MessageID: formatID(d.id), Attempt: d.attempt, Err: fmt.Errorf("%s", driver.ReasonLeaseExpired), Time: at})
	}
	return nil
}

// prune deletes the finished messages past Options.Retention, the dead
// ones past Options.DeadRetention (unless negative) and the inbox claims
// past Retention.
func (s *store) prune(ctx context.Context) error {
	t := now()
	return s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `DELETE FROM conveyor_messages WHERE state = 2 AND run_at < ?`, t-s.opts.Retention.Microseconds()); err != nil {
			return err
		}
		if s.opts.DeadRetention > 0 {
			if _, err := c.ExecContext(ctx, `DELETE FROM conveyor_messages WHERE state = 3 AND run_at < ?`, t-s.opts.DeadRetention.Microseconds()); err != nil {
				return err
			}
		}
		_, err := c.ExecContext(ctx, `DELETE FROM conveyor_inbox WHERE claimed_at < ?`, t-s.opts.Retention.Microseconds())
		return err
	})
}
