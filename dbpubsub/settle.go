package dbpubsub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/batch"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Settling a delivery: Ack, Nack, Fail, Reject and ExtendLease on a
// message, and the settle queue that writes them. Settles asked for
// concurrently, by any consumer of the PubSub, share statements: up to
// settlers statements are in flight at once, each for up to
// maxSettleBatch settles, fenced row by row by the delivery's token and
// lease. Ack queues its settle and returns (unless Options.ConfirmAck);
// Flush and Close wait for the queued ones.

// settlers is how many settle statements may be in flight at once: while
// one waits for its commit, the next group is sent, and PostgreSQL flushes
// concurrent commits together.
const settlers = 2

// maxSettleBatch is the most settles grouped into one statement.
const maxSettleBatch = 512

// ackLinger is how long a settle lane waits for more asynchronous acks
// before it writes the ones queued, when nothing else waits: fewer, larger
// statements leave the server's commits to the enqueues and claims.
// Synchronous settles, Flush and a queue of lingerBatch acks end the wait.
const ackLinger = 5 * time.Millisecond

// lingerBatch is how many queued asynchronous acks end a lane's linger.
const lingerBatch = 256

// maxQueuedAcks bounds the settles waiting for a statement when an
// asynchronous ack is queued (without Options.ConfirmAck); an Ack beyond
// it waits for its commit, which slows the consumers down to the pace of
// the settlers.
const maxQueuedAcks = 8 * maxSettleBatch

// Row states, as stored in the status column.
const (
	statusPending    = "pending"
	statusProcessing = "processing"
	statusFinished   = "finished"
	statusDead       = "dead"
)

// message is one delivery of a row. Its settle calls are fenced by the
// row's delivery token: they only touch the row while this delivery holds
// its lease.
type message struct {
	st *topicState
	d  *delivery

	mu    sync.Mutex
	state msgState
}

type msgState uint8

const (
	msgOpen    msgState = iota
	msgBusy             // a settle is in flight
	msgSettled          // acked, nacked, failed or rejected
	msgExpired          // the lease ran out (the database said so)
)

var (
	_ backend.Message = (*message)(nil)
	_ pubsub.Headerer = (*message)(nil)
)

func (m *message) ID() string   { return strconv.FormatInt(m.d.id, 10) }
func (m *message) Data() []byte { return m.d.data }
func (m *message) Attempt() int { return m.d.attempt }

// Header returns the header the message was enqueued with, nil if none.
func (m *message) Header() pubsub.Header { return m.d.header }

// Ack settles the message for good; it returns once it is queued for the
// next grouped statement, or, with Options.ConfirmAck, once that is
// committed.
func (m *message) Ack(ctx context.Context) error {
	if !m.st.ps.opts.ConfirmAck {
		if ok, err := m.ackAsync(); ok || err != nil {
			return err
		}
	}
	return m.settle(ctx, "ack", statusFinished, 0, "")
}

// Nack gives the message back for redelivery after the retry policy's
// backoff, or makes it dead when its attempts are exhausted.
func (m *message) Nack(ctx context.Context) error { return m.fail(ctx, "nack", nil) }

// Fail is Nack keeping reason, shown if the message ends up dead.
func (m *message) Fail(ctx context.Context, reason error) error { return m.fail(ctx, "fail", reason) }

func (m *message) fail(ctx context.Context, op string, reason error) error {
	f := backend.Fail(m.st.ps.opts.Retry, m.d.attempt, reason)
	if f.Dead {
		err := m.settle(ctx, op, statusDead, 0, f.Reason)
		if err == nil {
			m.st.reportDead(m.d.id, m.d.attempt, pubsub.AttemptsExhausted, f.Reason)
		}
		return err
	}
	err := m.settle(ctx, op, statusPending, f.Backoff, f.Reason)
	if err == nil {
		m.st.wake() // the fetcher sleeps until the new due time
	}
	return err
}

// Reject makes the message dead at once, keeping reason.
func (m *message) Reject(ctx context.Context, reason error) error {
	r := backend.RejectReason(reason)
	err := m.settle(ctx, "reject", statusDead, 0, r)
	if err == nil {
		m.st.reportDead(m.d.id, m.d.attempt, pubsub.Rejected, r)
	}
	return err
}

// ExtendLease moves the lease deadline to now+d (by the database's clock).
func (m *message) ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("dbpubsub: extend lease of message %s by %v: want a positive duration", m.ID(), d)
	}
	if err := m.acquire("extend lease"); err != nil {
		return err
	}
	err := m.extend(ctx, d)
	m.mu.Lock()
	m.state = msgOpen
	if errors.Is(err, pubsub.ErrLeaseExpired) {
		m.state = msgExpired
	}
	m.mu.Unlock()
	return err
}

func (m *message) extend(ctx context.Context, d time.Duration) error {
	ps := m.st.ps
	if err := ps.begin(); err != nil {
		return m.errorf("extend lease", err)
	}
	defer ps.end()
	var n int64
	err := ps.write(ctx, ps.sqldb, func(ctx context.Context, ex execer) error {
		res, err := ex.ExecContext(ctx, ps.stmts.extend, m.d.id, m.d.token, d.Microseconds())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return m.errorf("extend lease", ctxErr(ctx, err))
	}
	if n == 0 {
		return m.errorf("extend lease", pubsub.ErrLeaseExpired)
	}
	return nil
}

// acquire marks a settle or extension in flight, or says why none can be.
func (m *message) acquire(op string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.state {
	case msgSettled, msgBusy:
		return m.errorf(op, pubsub.ErrSettled)
	case msgExpired:
		return m.errorf(op, pubsub.ErrLeaseExpired)
	}
	m.state = msgBusy
	return nil
}

// settle writes the new status of the row in the next grouped statement and
// returns once it is committed.
func (m *message) settle(ctx context.Context, op, status string, delay time.Duration, reason string) error {
	if err := m.acquire(op); err != nil {
		return err
	}
	err := m.st.ps.settle(ctx, &settleReq{
		id: m.d.id, token: m.d.token, status: status, delay: delay.Microseconds(), reason: reason,
	})
	m.mu.Lock()
	switch {
	case err == nil:
		m.state = msgSettled
	case errors.Is(err, pubsub.ErrLeaseExpired):
		m.state = msgExpired
	default:
		m.state = msgOpen // nothing was changed (or it is unknown); the caller may try again
	}
	m.mu.Unlock()
	if err != nil {
		return m.errorf(op, err)
	}
	return nil
}

// ackAsync queues the ack (unless Options.ConfirmAck). It reports false,
// leaving the ack to the synchronous path, when the lease is in its second
// half (so that a lost lease is reported, not logged) or the queue is
// full.
func (m *message) ackAsync() (bool, error) {
	ps := m.st.ps
	if time.Since(m.d.leased) > ps.opts.Lease/2 {
		return false, nil
	}
	if err := m.acquire("ack"); err != nil {
		return false, err
	}
	queued := ps.ackAsync(&settleReq{id: m.d.id, token: m.d.token, status: statusFinished, topic: m.st.name})
	m.mu.Lock()
	if queued {
		m.state = msgSettled
	} else {
		m.state = msgOpen
	}
	m.mu.Unlock()
	return queued, nil
}

func (m *message) errorf(op string, err error) error {
	return backend.MessageError("dbpubsub", op, m.ID(), m.d.attempt, m.st.topic, m.st.sub, err)
}

// settleReq asks for one delivered row to change.
type settleReq struct {
	id, token int64
	status    string
	delay     int64 // µs, for status pending
	reason    string
	done      chan error // nil: an asynchronous ack, nobody waits
	topic     string     // for the log of a failed asynchronous ack
}

func newSettleQueue(ps *PubSub) *batch.Queue[*settleReq] {
	return batch.New(ps.writers, batch.Options[*settleReq]{Lanes: settlers, Max: maxSettleBatch, Handle: ps.execSettle, Pace: ps.pace.wait})
}

// settlePace decides when a settle lane takes its next batch: at once if
// a synchronous settle or a Flush waits or lingerBatch acks are queued,
// else after ackLinger (or when one of those comes).
type settlePace struct {
	waiting atomic.Int64  // synchronous settles and Flush calls waiting
	acks    atomic.Int64  // asynchronous acks queued, not yet taken
	kick    chan struct{} // ends a linger (buffered: a kick is never lost)
}

func (p *settlePace) wait(stop <-chan struct{}) {
	if p.waiting.Load() > 0 || p.acks.Load() >= lingerBatch {
		return
	}
	t := time.NewTimer(ackLinger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.kick:
	case <-stop:
	}
}

// hurry ends a lane's linger.
func (p *settlePace) hurry() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// settle runs r in the next grouped statement and returns once it is
// committed: nil, an error wrapping pubsub.ErrLeaseExpired when the
// delivery no longer holds the row, or the statement's error. If ctx ends
// before r is taken into a statement, it returns ctx's error and nothing
// was changed; once taken, r's outcome is awaited (see PubSub.write).
func (ps *PubSub) settle(ctx context.Context, r *settleReq) error {
	if err := ps.begin(); err != nil {
		return err
	}
	defer ps.end()
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan error, 1)
	ps.pace.waiting.Add(1)
	defer ps.pace.waiting.Add(-1)
	t, _ := ps.settles.Add(r, 0)
	ps.pace.hurry()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if ps.settles.Cancel(t) {
			return ctx.Err()
		}
		return <-r.done
	}
}

// ackAsync queues r as an asynchronous ack and reports whether it was
// queued (false: the PubSub is closed or the queue is full). The ack holds
// a PubSub call until it is written, so Close writes it first.
func (ps *PubSub) ackAsync(r *settleReq) bool {
	if err := ps.begin(); err != nil {
		return false
	}
	if _, ok := ps.settles.Add(r, maxQueuedAcks); !ok {
		ps.end()
		return false
	}
	if ps.pace.acks.Add(1) >= lingerBatch {
		ps.pace.hurry()
	}
	return true
}

// Flush returns once the acks queued before the call (see
// Options.ConfirmAck) are written to the database (or failed, which is
// logged), or when ctx ends. With ConfirmAck there is nothing to wait
// for. Stats, ListDead and the other reads of a topic flush first, so they
// see this PubSub's acks.
func (ps *PubSub) Flush(ctx context.Context) error {
	ps.pace.waiting.Add(1)
	defer ps.pace.waiting.Add(-1)
	ps.pace.hurry()
	return ps.settles.Wait(ctx)
}

type idToken struct{ id, token int64 }

// execSettle writes the settles of batch in one statement and tells each
// its outcome.
func (ps *PubSub) execSettle(batch []*settleReq) {
	// Lock rows in id order, so that two statements never wait for each
	// other's rows in opposite orders.
	slices.SortFunc(batch, func(a, b *settleReq) int { return cmp.Compare(a.id, b.id) })
	n := len(batch)
	var acks int64
	for _, r := range batch {
		if r.done == nil {
			acks++
		}
	}
	ps.pace.acks.Add(-acks)
	stmt := ps.stmts.settle
	if acks == int64(n) {
		stmt = ps.stmts.settleAsync // nobody waits: its commit need not either
	}
	ids, tokens, delays := make([]int64, n), make([]int64, n), make([]int64, n)
	statuses, reasons := make([]string, n), make([]string, n)
	for i, r := range batch {
		ids[i], tokens[i], statuses[i], delays[i], reasons[i] = r.id, r.token, r.status, r.delay, r.reason
	}
	done := make(map[idToken]bool, n)
	ctx, cancel := context.WithTimeout(ps.ctx, ps.opts.StatementTimeout)
	defer cancel()
	err := retryDeadlock(func() error {
		rows, err := ps.sqldb.QueryContext(ctx, stmt, ids, tokens, statuses, delays, reasons)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k idToken
			if err := rows.Scan(&k.id, &k.token); err != nil {
				return err
			}
			done[k] = true
		}
		return rows.Err()
	})
	for _, r := range batch {
		var rerr error
		switch {
		case err != nil:
			rerr = err
		case done[idToken{r.id, r.token}]:
		default:
			rerr = fmt.Errorf("%w: the row is no longer leased to this delivery", pubsub.ErrLeaseExpired)
		}
		if r.done != nil {
			r.done <- rerr
			continue
		}
		if rerr != nil {
			ps.opts.Logger.Warn("dbpubsub: asynchronous ack not written; the message is delivered again when its lease runs out",
				slog.String("topic", r.topic), slog.String("message_id", strconv.FormatInt(r.id, 10)), slog.Any("error", rerr))
		}
		ps.end() // the call ackAsync began
	}
}

// settleDeadlockTries is how many times execSettle runs its statement when
// PostgreSQL aborts it to break a deadlock.
const settleDeadlockTries = 3

// retryDeadlock runs stmt, again when PostgreSQL aborted it to break a
// deadlock (SQLSTATE 40P01: it wrote nothing), up to settleDeadlockTries
// times. A settle statement can run again: it settles only the rows still
// leased to their deliveries.
func retryDeadlock(stmt func() error) error {
	var err error
	for range settleDeadlockTries {
		var pgErr *pgconn.PgError
		if err = stmt(); !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
			return err
		}
	}
	return err
}
