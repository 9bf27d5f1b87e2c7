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

	"github.com/conveyorgo/conveyor/internal/batch"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Settling a delivery: Ack, Retry, Dead and Extend of a subscription's
// delivery (driver.Subscription, called by the engine's Ack, Nack, Fail,
// Reject and ExtendLease), and the settle queue that writes them. Settles asked for
// concurrently, by any consumer of the PubSub, share statements: up to
// settlers statements are in flight at once, each for up to
// maxSettleBatch settles, fenced row by row by the delivery's token and
// lease. Ack queues its settle and returns (unless Options.ConfirmAck);
// Flush and Close wait for the queued ones.

// ErrOutcomeUnknown is wrapped, beside ctx's error, by the error of an
// enqueue outside a caller's transaction (Enqueue, EnqueueAt,
// EnqueueBatch, EnqueueUnique: the message may or may not be committed;
// retry with EnqueueUnique, or claim in the consumer) or of a
// settle (Nack, Fail, Reject, ExtendLease, an Ack with
// Options.ConfirmAck) whose ctx ended while its statement was on its way
// to or from the server: the call returns then rather than await the
// reply (a server that stopped answering would hold it until
// StatementTimeout), and the statement may or may not take effect. A
// settle that did leaves the delivery settled (a second settle returns
// pubsub.ErrSettled or pubsub.ErrLeaseExpired); one that did not leaves it
// leased, to be settled again or to come back when the lease runs out.
var ErrOutcomeUnknown = errors.New("dbpubsub: the statement was sent, its outcome is unknown")

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

// Ack settles d's row for good; it returns once the ack is queued for the
// next grouped statement, or, with Options.ConfirmAck or while the lease is
// in its second half (so that a lost lease is reported, not logged), once
// that is committed.
func (st *topicState) Ack(ctx context.Context, d *driver.Delivery) error {
	row := d.Msg.(*delivery)
	if !st.ps.opts.ConfirmAck && time.Since(row.leased) <= st.ps.opts.Lease/2 {
		if err := row.fence.check(); err != nil {
			return err
		}
		if st.ps.ackAsync(&settleReq{id: row.id, token: row.token, status: statusFinished, topic: st.name,
			until: row.leased.Add(st.ps.opts.Lease)}) {
			return nil
		}
	}
	return st.settle(ctx, row, statusFinished, 0, "")
}

// Retry gives d's row back, due after delay (by the database's clock).
func (st *topicState) Retry(ctx context.Context, d *driver.Delivery, delay time.Duration, reason string) error {
	err := st.settle(ctx, d.Msg.(*delivery), statusPending, delay, reason)
	if err == nil {
		st.wake() // the fetcher sleeps until the new due time
	}
	return err
}

// Dead makes d's row dead, keeping reason.
func (st *topicState) Dead(ctx context.Context, d *driver.Delivery, reason string) error {
	return st.settle(ctx, d.Msg.(*delivery), statusDead, 0, reason)
}

// Extend moves d's lease deadline to now+by, by the database's clock.
func (st *topicState) Extend(ctx context.Context, d *driver.Delivery, by time.Duration) error {
	row := d.Msg.(*delivery)
	if err := row.fence.check(); err != nil {
		return err
	}
	ps := st.ps
	if err := ps.begin(); err != nil {
		return err
	}
	defer ps.end()
	// Bounded by ctx too: an extension whose outcome is unknown leaves the
	// lease as it was or extended, both of which the caller can live with
	// (another extension, or the message back after the lease).
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	var n int64
	res, err := ps.sqldb.ExecContext(sctx, ps.stmts.extend, row.id, row.token, by.Microseconds())
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
		}
		return ctxErr(ctx, ps.closedErr(err))
	}
	if n == 0 {
		return errNotLeased
	}
	return nil
}

// errNotLeased is the error of a settle or an extension whose row is no
// longer leased to its delivery.
var errNotLeased = fmt.Errorf("%w: the row is no longer leased to this delivery", driver.ErrLeaseLost)

// settle writes the new status of row in the next grouped statement and
// returns once it is committed.
func (st *topicState) settle(ctx context.Context, row *delivery, status string, delay time.Duration, reason string) error {
	if err := row.fence.check(); err != nil {
		return err
	}
	return st.ps.settle(ctx, &settleReq{id: row.id, token: row.token, status: status, delay: delay.Microseconds(), reason: reason, row: row})
}

// fence keeps what became of a settle statement whose caller returned in
// doubt (ErrOutcomeUnknown) before the statement's lane answered: until
// then, and after it settled the row, another settle of the delivery
// returns pubsub.ErrSettled; after the lease was found lost,
// driver.ErrLeaseLost; after any other failure, it may run. So the
// delivery stays in the state the database has, as the engine's
// settle-once state keeps it for the calls that returned an outcome.
type fence struct {
	mu    sync.Mutex
	state fenceState
}

type fenceState uint8

const (
	fenceOpen    fenceState = iota
	fenceDoubt              // a statement whose caller left is in flight
	fenceSettled            // that statement settled the row
	fenceLost               // that statement found the lease lost
)

// check says why a settle or an extension cannot run, if it cannot.
func (f *fence) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.state {
	case fenceDoubt, fenceSettled:
		return fmt.Errorf("%w: an earlier settle's statement, whose call returned in doubt, is in flight or settled it", pubsub.ErrSettled)
	case fenceLost:
		return errNotLeased
	}
	return nil
}

// leave records that the caller of the settle whose outcome is sent on
// done returns in doubt, unless the outcome came meanwhile: then it
// returns it.
func (f *fence) leave(done <-chan error) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case err := <-done:
		return err, true
	default:
	}
	f.state = fenceDoubt
	return nil, false
}

// answer sends err, the outcome of a settle statement, on done, recording
// it first if the caller left (leave).
func (f *fence) answer(err error, done chan<- error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == fenceDoubt {
		switch {
		case err == nil:
			f.state = fenceSettled
		case errors.Is(err, pubsub.ErrLeaseExpired):
			f.state = fenceLost
		default:
			f.state = fenceOpen
		}
	}
	done <- err
}

// settleReq asks for one delivered row to change.
type settleReq struct {
	id, token int64
	status    string
	delay     int64 // µs, for status pending
	reason    string
	done      chan error // nil: an asynchronous ack, nobody waits
	topic     string     // for the log of a failed asynchronous ack
	until     time.Time  // an asynchronous ack's lease ends no earlier (local clock): its retries stop then
	retried   bool       // an asynchronous ack tried again (retryAcks)
	row       *delivery  // a synchronous settle's delivery, told its outcome by the lane
}

func newSettleQueue(ps *store) *batch.Queue[*settleReq] {
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
// was changed; once taken, it returns ctx's error wrapping
// ErrOutcomeUnknown at once, rather than await a reply a server that
// stopped answering would hold until StatementTimeout, and the lane tells
// r.row's fence the outcome.
func (ps *store) settle(ctx context.Context, r *settleReq) error {
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
		if err, answered := r.row.fence.leave(r.done); answered {
			return err
		}
		return fmt.Errorf("%w (%w)", ctx.Err(), ErrOutcomeUnknown)
	}
}

// ackAsync queues r as an asynchronous ack and reports whether it was
// queued (false: the PubSub is closed or the queue is full). The ack holds
// a PubSub call until it is written, so Close writes it first.
func (ps *store) ackAsync(r *settleReq) bool {
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

// Flush is PubSub.Flush.
func (ps *store) Flush(ctx context.Context) error {
	ps.pace.waiting.Add(1)
	defer ps.pace.waiting.Add(-1)
	ps.pace.hurry()
	return ps.settles.Wait(ctx)
}

type idToken struct{ id, token int64 }

// execSettle writes the settles of batch in one statement and tells each
// its outcome. The asynchronous acks of a statement that failed for a
// reason other than their leases are tried again (retryAcks).
func (ps *store) execSettle(batch []*settleReq) {
	// Lock rows in id order, so that two statements never wait for each
	// other's rows in opposite orders.
	slices.SortFunc(batch, func(a, b *settleReq) int { return cmp.Compare(a.id, b.id) })
	var acks int64
	for _, r := range batch {
		if r.done == nil {
			acks++
		}
	}
	ps.pace.acks.Add(-acks)
	stmt := ps.stmts.settle
	if acks == int64(len(batch)) {
		stmt = ps.stmts.settleAsync // nobody waits: its commit need not either
	}
	done, err := ps.runSettle(stmt, batch)
	var retry []*settleReq
	for _, r := range batch {
		if r.done != nil {
			r.row.fence.answer(settleOutcome(r, done, err), r.done)
			continue
		}
		if err != nil && transient(err) {
			retry = append(retry, r)
			continue
		}
		ps.ackWritten(r, settleOutcome(r, done, err))
	}
	if len(retry) > 0 {
		ps.retryAcks(retry)
	}
}

// runSettle runs stmt, a settle statement, for batch, in id order, and
// returns the rows it settled.
func (ps *store) runSettle(stmt string, batch []*settleReq) (map[idToken]bool, error) {
	n := len(batch)
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
	return done, err
}

// settleOutcome is r's outcome in a statement that settled the rows of
// done, or failed with err.
func settleOutcome(r *settleReq, done map[idToken]bool, err error) error {
	switch {
	case err != nil:
		return err
	case done[idToken{r.id, r.token}]:
		return nil
	}
	return errNotLeased
}

// ackWritten ends asynchronous ack r, whose outcome is err: a failure is
// logged, nobody else hears of it.
func (ps *store) ackWritten(r *settleReq, err error) {
	switch {
	case err == nil:
	case r.retried && errors.Is(err, pubsub.ErrLeaseExpired):
		// An earlier try, whose connection was lost, may have been
		// written: its reply never came.
		ps.opts.Logger.Warn("dbpubsub: asynchronous ack tried again after a lost connection found its row no longer leased to the delivery; the first try may have been written, else the message is delivered again",
			slog.String("topic", r.topic), slog.String("message_id", strconv.FormatInt(r.id, 10)))
	default:
		ps.opts.Logger.Warn("dbpubsub: asynchronous ack not written; the message is delivered again when its lease runs out",
			slog.String("topic", r.topic), slog.String("message_id", strconv.FormatInt(r.id, 10)), slog.Any("error", err))
	}
	ps.end() // the call ackAsync began
}

// Bounds of the pause between tries of asynchronous acks (retryAcks).
const (
	ackRetryFirst = 10 * time.Millisecond
	ackRetryMax   = time.Second
)

// retryAcks tries asynchronous acks again, whose statement failed for a
// reason other than their leases (transient: the connection lost, the
// server restarting, a deadlock or a serialization failure): at once, on
// another connection of the pool (database/sql discards a broken one),
// then after a pause that doubles, for as long as each one's lease holds
// and the PubSub is not closed past its CloseTimeout. It runs on the lane
// that ran the statement, so that Flush, and Close, wait for the acks;
// the other lane keeps settling meanwhile. A settle statement can run
// again: it settles only the rows still leased to their deliveries.
func (ps *store) retryAcks(acks []*settleReq) {
	pause := time.Duration(0)
	for len(acks) > 0 {
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ps.ctx.Done():
			}
			t.Stop()
		}
		pause = min(max(2*pause, ackRetryFirst), ackRetryMax)
		now := time.Now()
		try := acks[:0]
		for _, r := range acks {
			if ps.ctx.Err() != nil || !now.Before(r.until) {
				ps.ackWritten(r, fmt.Errorf("%w: its statement failed until the lease ran out or the PubSub closed", errAckGaveUp))
				continue
			}
			r.retried = true
			try = append(try, r)
		}
		if len(try) == 0 {
			return
		}
		ps.opts.Logger.Debug("dbpubsub: asynchronous acks whose statement failed are tried again",
			slog.Int("count", len(try)))
		done, err := ps.runSettle(ps.stmts.settleAsync, try)
		acks = try[:0:0]
		for _, r := range try {
			if err != nil && transient(err) {
				acks = append(acks, r)
				continue
			}
			ps.ackWritten(r, settleOutcome(r, done, err))
		}
	}
}

// errAckGaveUp is the logged error of an asynchronous ack given up.
var errAckGaveUp = errors.New("asynchronous ack given up")

// transient reports whether err, the error of a settle statement, may
// pass when the statement runs again on another connection: anything but
// an error the server answered about the statement itself (a missing
// table, a permission), except for the classes of a lost connection (08),
// a transaction rolled back to be tried again (40: serialization failure,
// deadlock), insufficient resources (53), an operator's intervention (57:
// a server shutting down or restarting, a terminated backend) and system
// errors (58). The context's errors count as transient: a statement that
// ran into StatementTimeout on a silent connection is such a case.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return true
	}
	switch pgErr.Code[:2] {
	case "08", "40", "53", "57", "58":
		return true
	}
	return false
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
