package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Topic is a handle on one topic of a PubSub. Besides pubsub.Topic it has
// every optional ability of package pubsub; every enqueue runs in the
// caller's transaction when ctx carries one (WithTx).
type Topic struct {
	st     *topicState
	err    error // the name is invalid
	closed chan struct{}
	once   sync.Once
	enq    enqGroup // enqueues sharing statements (enqueue.go)
}

var (
	_ pubsub.Delayer        = (*Topic)(nil)
	_ pubsub.BatchEnqueuer  = (*Topic)(nil)
	_ pubsub.UniqueEnqueuer = (*Topic)(nil)
	_ pubsub.DeadLetters    = (*Topic)(nil)
	_ pubsub.Stater         = (*Topic)(nil)
)

// Name returns the topic's name ("" for an invalid one).
func (t *Topic) Name() string {
	if t.err != nil {
		return ""
	}
	return t.st.name
}

// Enqueue adds a copy of data, ready at once. It returns when the row is
// committed.
func (t *Topic) Enqueue(ctx context.Context, data []byte) error {
	return t.enqueue(ctx, "enqueue", data, time.Time{})
}

// EnqueueAt adds a copy of data, to be delivered no earlier than at (by the
// database's clock).
func (t *Topic) EnqueueAt(ctx context.Context, data []byte, at time.Time) error {
	return t.enqueue(ctx, "enqueue", data, at)
}

// MaxUniqueKeyLen is the longest key EnqueueUnique accepts, in bytes.
const MaxUniqueKeyLen = 1000

// EnqueueUnique adds a copy of data unless the topic keeps a message
// enqueued under key: ready, scheduled, processing, dead, or finished and
// not yet pruned (Options.Retention). It reports whether data was added.
// Concurrent calls with one key, from any process, add one message. The
// key is 1 to MaxUniqueKeyLen bytes of UTF-8 without NUL.
func (t *Topic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if err := t.check(); err != nil {
		return false, err
	}
	st := t.st
	ps := st.ps
	switch {
	case key == "":
		return false, fmt.Errorf("dbpubsub: unique enqueue on topic %q: empty key", st.name)
	case len(key) > MaxUniqueKeyLen || !utf8.ValidString(key) || strings.ContainsRune(key, 0):
		return false, fmt.Errorf("dbpubsub: unique enqueue on topic %q: want a key of 1 to %d bytes of UTF-8 without NUL", st.name, MaxUniqueKeyLen)
	}
	if err := pubsub.CheckSize(data, ps.opts.MaxDataSize); err != nil {
		return false, fmt.Errorf("dbpubsub: unique enqueue on topic %q: %w", st.name, err)
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ch, err := st.channel(ctx)
	if err != nil {
		return false, ctxErr(ctx, fmt.Errorf("dbpubsub: unique enqueue on topic %q: %w", st.name, err))
	}
	if err := ps.begin(); err != nil {
		return false, fmt.Errorf("dbpubsub: unique enqueue on topic %q: %w", st.name, err)
	}
	defer ps.end()
	if data == nil {
		data = []byte{}
	}
	var ex execer = ps.sqldb
	idb, txex, err := txFrom(ctx)
	if err != nil {
		return false, err
	}
	if idb != nil {
		ex = txex
	}
	added := false
	err = ps.write(ctx, ex, func(ctx context.Context, ex execer) error {
		var id int64
		err := ex.QueryRowContext(ctx, ps.stmts.enqueueUniq, st.name, data, inStatement(idb, ch), key).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		added = err == nil
		return err
	})
	if err != nil {
		return false, ctxErr(ctx, fmt.Errorf("dbpubsub: unique enqueue on topic %q: %w", st.name, err))
	}
	if added {
		st.committed(idb, ch)
	}
	return added, nil
}

// EnqueueBatch adds a copy of every item of data in one statement: all or
// none.
func (t *Topic) EnqueueBatch(ctx context.Context, data [][]byte) error {
	return t.enqueueBatch(ctx, data)
}

// execer is what the hot path runs its constant SQL on: *sql.DB, *sql.Tx
// or *sql.Conn (not bun's wrappers, which render arguments into the text).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs f, a write whose outcome the caller must learn truthfully, on
// ex. A connection is taken with ctx, so that a canceled ctx or an
// unreachable database stops the call before anything is sent; once sent,
// the statement is awaited even if ctx ends (up to
// Options.StatementTimeout), because pgx cancels the wait for the reply,
// not the statement: giving up early could report a failure for a row that
// was committed. The enqueues that share statements keep the same contract
// (enqueue.go).
func (ps *PubSub) write(ctx context.Context, ex execer, f func(context.Context, execer) error) error {
	if db, ok := ex.(*sql.DB); ok {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		ex = conn
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ps.opts.StatementTimeout)
	defer cancel()
	return f(sctx, ex)
}

func (t *Topic) enqueue(ctx context.Context, op string, data []byte, at time.Time) error {
	if err := t.check(); err != nil {
		return err
	}
	st := t.st
	ps := st.ps
	if err := pubsub.CheckSize(data, ps.opts.MaxDataSize); err != nil {
		return fmt.Errorf("dbpubsub: %s on topic %q: %w", op, st.name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	idb, ex, err := txFrom(ctx)
	if err != nil {
		return err
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("dbpubsub: %s on topic %q: %w", op, st.name, err))
	}
	if err := ps.begin(); err != nil {
		return fmt.Errorf("dbpubsub: %s on topic %q: %w", op, st.name, err)
	}
	defer ps.end()
	if data == nil {
		data = []byte{} // NULL is not a payload
	}
	if idb == nil {
		err = t.insert(ctx, &enqReq{data: [][]byte{data}, at: at, meta: m, size: len(data)})
	} else {
		err = ps.write(ctx, ex, func(ctx context.Context, ex execer) error {
			var err error
			if at.IsZero() {
				_, err = ex.ExecContext(ctx, m.stmts.enqueue, st.name, data, m.ch)
			} else {
				_, err = ex.ExecContext(ctx, ps.stmts.enqueueAt, st.name, data, at, m.ch)
			}
			return err
		})
	}
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("dbpubsub: %s on topic %q: %w", op, st.name, err))
	}
	return nil
}

// inStatement is the channel an enqueue statement notifies: the topic's
// own inside a caller's transaction idb, so that the NOTIFY goes out when
// it commits; none otherwise (the notifier sends it, see notify.go).
func inStatement(idb bun.IDB, ch string) string {
	if idb != nil {
		return ch
	}
	return ""
}

// committed tells the consumers of st about a message just enqueued
// outside a caller's transaction: this PubSub's at once, other processes'
// through the notifier. A message in a caller's transaction is announced
// by the NOTIFY in its statement, on commit.
func (st *topicState) committed(idb bun.IDB, ch string) {
	if idb != nil {
		return
	}
	st.wake()
	st.ps.notifyLater(ch)
}

func (t *Topic) enqueueBatch(ctx context.Context, data [][]byte) error {
	if err := t.check(); err != nil {
		return err
	}
	st := t.st
	ps := st.ps
	items := make([][]byte, len(data))
	size := 0
	for i, d := range data {
		if err := pubsub.CheckSize(d, ps.opts.MaxDataSize); err != nil {
			return fmt.Errorf("dbpubsub: batch item %d on topic %q: %w", i, st.name, err)
		}
		if d == nil {
			d = []byte{}
		}
		items[i] = d
		size += len(d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	idb, ex, err := txFrom(ctx)
	if err != nil {
		return err
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("dbpubsub: batch enqueue on topic %q: %w", st.name, err))
	}
	if err := ps.begin(); err != nil {
		return fmt.Errorf("dbpubsub: batch enqueue on topic %q: %w", st.name, err)
	}
	defer ps.end()
	if idb == nil {
		err = t.insert(ctx, &enqReq{data: items, meta: m, size: size})
	} else {
		err = ps.write(ctx, ex, func(ctx context.Context, ex execer) error {
			_, err := ex.ExecContext(ctx, m.many(len(items), true), st.name, items, m.ch)
			return err
		})
	}
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("dbpubsub: batch enqueue of %d on topic %q: %w", len(items), st.name, err))
	}
	return nil
}

// Dequeue blocks until a message is ready, ctx ends, or the topic closes.
// While the database cannot be reached it keeps trying, logging the
// errors, until ctx ends. A schema that is not migrated is an error at
// once.
func (t *Topic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := t.st
	if _, err := st.channel(ctx); err != nil {
		if errors.Is(err, migrations.ErrNotMigrated) {
			return nil, fmt.Errorf("dbpubsub: dequeue on topic %q: %w", st.name, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		// The database is unreachable: the fetcher keeps trying.
	}
	st.start()
	for {
		d, w := st.take()
		if w != nil {
			st.poke()
			select {
			case d = <-w.ch:
			case <-ctx.Done():
				st.leave(w)
				return nil, ctx.Err()
			case <-t.closed:
				st.leave(w)
				return nil, st.closedErr()
			case <-st.ps.closed:
				st.leave(w)
				return nil, st.closedErr()
			}
		}
		if m := st.handOut(ctx, d); m != nil {
			return m, nil
		}
	}
}

// Close closes this handle; other handles on the topic, the messages, and
// the deliveries already made are untouched. A second Close returns
// pubsub.ErrClosed.
func (t *Topic) Close() error {
	if t.err != nil {
		return t.err
	}
	err := t.st.closedErr()
	t.once.Do(func() {
		close(t.closed)
		err = nil
	})
	return err
}

func (t *Topic) check() error {
	if t.err != nil {
		return t.err
	}
	select {
	case <-t.closed:
		return t.st.closedErr()
	case <-t.st.ps.closed:
		return t.st.closedErr()
	default:
		return nil
	}
}
