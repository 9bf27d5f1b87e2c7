package sqlitepubsub

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// The group commit: the store's hot writes (claims, settles, single
// enqueues) of the calls in flight in this process share one immediate
// transaction and its commit (one fsync at synchronous=FULL). A call
// queues its op and waits for its turn at the write lock (s.writing); the
// call that gets it leads: it begins the transaction, takes every op
// queued, runs them, commits, and hands each its outcome. The claims of
// one subscription in a group are one statement. An op returns once its
// transaction committed, as if it ran alone; one that fails rolls the
// group back to a savepoint, gets its error, and the others run again in
// the same transaction.
// An op leaves the queue when its call's ctx ends before a leader took it;
// once taken (the lock held), it runs to its end, waiting on no one.

// maxGroup is the most ops run in one transaction.
const maxGroup = 512

// op states.
const (
	opQueued int32 = iota
	opTaken
	opWithdrawn
)

// op is one write of a group: exec, or a claim of one copy of claim.u's
// subscription, which the leader writes into claim.
type op struct {
	exec  func(ctx context.Context, c *sql.Conn) error
	claim *claimReq
	state atomic.Int32
	done  chan struct{}
	err   error
}

// claimReq is a claim's part of an op; the leader fills it.
type claimReq struct {
	u      *subscription
	found  bool
	id     int64
	token  int64
	att    int
	header sql.NullString
	data   []byte
}

// group runs o in the next group commit and returns its outcome; until a
// leader takes it, it waits no longer than ctx.
func (s *store) group(ctx context.Context, o *op) (err error) {
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
	o.done = make(chan struct{})
	s.queueMu.Lock()
	s.queue = append(s.queue, o)
	s.queueMu.Unlock()
	for {
		select {
		case <-o.done:
			return o.err
		case s.writing <- struct{}{}:
			if err, ok := s.lead(ctx, o); ok {
				return err
			}
		case <-ctx.Done():
			if o.state.CompareAndSwap(opQueued, opWithdrawn) {
				return s.busy(ctx, ctx.Err())
			}
			<-o.done
			return o.err
		}
	}
}

// lead runs groups of the queued ops, own among them unless another
// leader ran it, holding the process's turn at the write lock, which it
// gives back. It reports own's outcome when it could not begin a
// transaction (own is withdrawn then): ok is false when own is still to
// be waited for.
func (s *store) lead(ctx context.Context, own *op) (error, bool) {
	defer func() { <-s.writing }()
	for own.state.Load() == opQueued {
		var c *sql.Conn
		err := retryBusy(ctx, func() error {
			var err error
			if c == nil {
				if c, err = s.sqldb.Conn(ctx); err != nil {
					return err
				}
			}
			_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
			return err
		})
		if err != nil {
			if c != nil {
				_ = c.Close()
			}
			if own.state.CompareAndSwap(opQueued, opWithdrawn) {
				return s.busy(ctx, err), true
			}
			return nil, false
		}
		s.runGroup(context.WithoutCancel(ctx), c)
		_ = c.Close()
	}
	return nil, false
}

// take moves up to maxGroup queued ops out of the queue, oldest first.
func (s *store) take() []*op {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	var ops []*op
	i := 0
	for ; i < len(s.queue) && len(ops) < maxGroup; i++ {
		if o := s.queue[i]; o.state.CompareAndSwap(opQueued, opTaken) {
			ops = append(ops, o)
		}
	}
	s.queue = slices.Delete(s.queue, 0, i)
	if len(s.queue) == 0 {
		s.queue = nil
	}
	return ops
}

// runGroup runs the queued ops in the transaction begun on c, and ends
// it. An op that fails is rolled back with the others (to a savepoint),
// which run again in the same transaction: the lock is kept, so nothing
// waits for it anew.
func (s *store) runGroup(ctx context.Context, c *sql.Conn) {
	ops := s.take()
	rollback := func() { _, _ = c.ExecContext(ctx, "ROLLBACK") }
	if len(ops) > 1 {
		if _, err := c.ExecContext(ctx, "SAVEPOINT conveyor_group"); err != nil {
			rollback()
			s.finish(ops, classify(ctx, err))
			return
		}
	}
	for len(ops) > 0 {
		failed, err := s.runOps(ctx, c, ops)
		if err == nil {
			break
		}
		s.finish(failed, classify(ctx, err))
		ops = slices.DeleteFunc(ops, func(o *op) bool { return slices.Contains(failed, o) })
		if len(ops) == 0 {
			break
		}
		if _, rerr := c.ExecContext(ctx, "ROLLBACK TO conveyor_group"); rerr != nil {
			// SQLite rolled the transaction back (a full disk, an I/O
			// error): nothing of the group is written.
			rollback()
			s.finish(ops, classify(ctx, err))
			return
		}
	}
	if len(ops) == 0 {
		rollback()
		return
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		rollback()
		s.finish(ops, classify(ctx, err))
		return
	}
	s.finish(ops, nil)
}

// finish ends ops with err.
func (s *store) finish(ops []*op, err error) {
	for _, o := range ops {
		o.err = err
		if err != nil && o.claim != nil {
			o.claim.found = false
		}
		close(o.done)
	}
}

// runOps runs ops on c, the claims of each subscription in one statement;
// on an error, it returns the ops that failed with it.
func (s *store) runOps(ctx context.Context, c *sql.Conn, ops []*op) ([]*op, error) {
	type key struct{ topic, sub string }
	var claims map[key][]*op
	var order []key
	for _, o := range ops {
		if o.claim == nil {
			if err := o.exec(ctx, c); err != nil {
				return []*op{o}, err
			}
			continue
		}
		k := key{o.claim.u.topic, o.claim.u.name}
		if claims == nil {
			claims = map[key][]*op{}
		}
		if _, ok := claims[k]; !ok {
			order = append(order, k)
		}
		claims[k] = append(claims[k], o)
	}
	for _, k := range order {
		if err := s.claimMany(ctx, c, claims[k]); err != nil {
			return claims[k], err
		}
	}
	return nil, nil
}

// claimMany leases up to len(ops) due copies of the ops' subscription in
// one statement and hands them to ops in order.
func (s *store) claimMany(ctx context.Context, c *sql.Conn, ops []*op) error {
	u := ops[0].claim.u
	t := now()
	rows, err := c.QueryContext(ctx, claimN, u.topic, u.name, t, t+micros(s.opts.Lease), len(ops))
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		if i == len(ops) {
			return errors.New("the claim returned more rows than asked for")
		}
		r := ops[i].claim
		if err := rows.Scan(&r.id, &r.token, &r.att, &r.header, &r.data); err != nil {
			return err
		}
		r.found = true
		i++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range ops[i:] {
		o.claim.found = false
	}
	return nil
}

// fill copies r into d.
func (r *claimReq) fill(d *driver.Delivery) {
	d.Msg, d.Token, d.Attempt, d.Data = ref(r.id), uint64(r.token), r.att, r.data
}
