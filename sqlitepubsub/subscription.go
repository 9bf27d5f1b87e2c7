package sqlitepubsub

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// subscription is the store's side of one subscription of a topic: its
// claims and the settles of its deliveries.
type subscription struct {
	s     *store
	topic string
	name  string
}

var (
	_ driver.Subscription = (*subscription)(nil)
	_ driver.Releaser     = (*subscription)(nil)
)

// ref is a delivery's handle on its row.
type ref int64

func (r ref) ID() string               { return formatID(int64(r)) }
func (r ref) AppendID(b []byte) []byte { return strconv.AppendInt(b, int64(r), 10) }

// claimN leases up to ?5 of the subscription's oldest due ready copies,
// unless the subscription is paused: one statement of a group commit
// (group.go) for the consumers of this process waiting on the
// subscription, run under the file's write lock, so that no two consumers
// of any process get one copy.
const claimN = `UPDATE conveyor_messages SET state = 1, run_at = ?4, attempt = attempt + 1, token = token + 1
	WHERE id IN (
		SELECT id FROM conveyor_messages
		WHERE topic = ?1 AND sub = ?2 AND state = 0 AND run_at <= ?3
		ORDER BY run_at, id LIMIT ?5
	) AND NOT EXISTS (SELECT 1 FROM conveyor_pauses WHERE topic = ?1 AND sub = ?2)
	RETURNING id, token, attempt, header, data`

// due reports whether the subscription has a due ready copy: the read a
// poll makes before it claims, so that an idle consumer never takes the
// write lock.
const due = `SELECT count(*) FROM (SELECT 1 FROM conveyor_messages
	WHERE topic = ?1 AND sub = ?2 AND state = 0 AND run_at <= ?3 LIMIT 1)`

// Receive leases the subscription's oldest due copy. While there is none
// it waits for an enqueue of this process, or polls every
// Options.PollInterval.
func (u *subscription) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	var poll *time.Timer
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	if err := u.consume(ctx); err != nil {
		return err
	}
	polled := false
	for {
		select {
		case <-stop:
			return pubsub.ErrClosed
		case <-u.s.done():
			return pubsub.ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		wake := u.s.waiter()
		ok, err := u.claim(ctx, d, polled)
		if err != nil || ok {
			return err
		}
		if poll == nil {
			poll = time.NewTimer(u.s.opts.PollInterval)
		} else {
			poll.Reset(u.s.opts.PollInterval)
		}
		polled = false
		select {
		case <-wake:
		case <-poll.C:
			polled = true
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return pubsub.ErrClosed
		case <-u.s.done():
			return pubsub.ErrClosed
		}
	}
}

// consume makes the default subscription one of its topic's before its
// first Receive in this process (pubsub's doc, "Subscriptions"): from
// then on every publish gives it a copy.
func (u *subscription) consume(ctx context.Context) error {
	if u.name != pubsub.DefaultSubscription {
		return nil
	}
	if _, ok := u.s.declared.Load(u.topic); ok {
		return nil
	}
	err := u.s.write(ctx, func(ctx context.Context) error {
		_, err := u.s.sqldb.ExecContext(ctx, `INSERT INTO conveyor_subscriptions (topic, name, created_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, u.topic, u.name, now())
		return err
	})
	if err == nil {
		u.s.declared.Store(u.topic, true)
	}
	return err
}

// claim leases one due copy into d, and reports whether it found one.
// After a poll it first reads whether one is due.
func (u *subscription) claim(ctx context.Context, d *driver.Delivery, check bool) (bool, error) {
	t := now()
	if check {
		var n int
		err := u.s.read(ctx, func(ctx context.Context) error {
			return u.s.sqldb.QueryRowContext(ctx, due, u.topic, u.name, t).Scan(&n)
		})
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, u.exists(ctx)
		}
	}
	// The claim runs in the next group commit, with the claims of this
	// subscription's other waiting consumers in one statement (claimN);
	// once the group holds the lock it runs to its end, even if ctx ends
	// meanwhile, so that no copy is left leased to no one.
	r := &claimReq{u: u}
	err := u.s.group(ctx, &op{claim: r})
	found := err == nil && r.found
	if found {
		h, herr := decodeHeader(r.header)
		if herr != nil {
			return false, fmt.Errorf("message %d: header: %w", r.id, herr)
		}
		r.fill(d)
		d.Header = h
	}
	if err != nil {
		found = false
	}
	if err != nil || found {
		return found, err
	}
	return false, u.exists(ctx)
}

// exists returns an error wrapping pubsub.ErrNoSubscription when the
// subscription is a named one that does not exist.
func (u *subscription) exists(ctx context.Context) error {
	if u.name == pubsub.DefaultSubscription {
		return nil
	}
	var n int
	err := u.s.read(ctx, func(ctx context.Context) error {
		return u.s.sqldb.QueryRowContext(ctx, `SELECT count(*) FROM conveyor_subscriptions WHERE topic = ? AND name = ?`, u.topic, u.name).Scan(&n)
	})
	if err == nil && n == 0 {
		return pubsub.ErrNoSubscription
	}
	return err
}

// fenced runs set on d's row while d holds its lease: the row is
// processing, with d's token, its lease not run out. Otherwise it returns
// driver.ErrLeaseLost.
func (u *subscription) fenced(ctx context.Context, d *driver.Delivery, set string, args ...any) error {
	t := now()
	q := `UPDATE conveyor_messages SET ` + set + ` WHERE id = ?1 AND state = 1 AND token = ?2 AND run_at > ?3`
	var n int64
	err := u.s.group(ctx, &op{exec: func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, q, append([]any{int64(d.Msg.(ref)), int64(d.Token), t}, args...)...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}})
	if err != nil {
		return err
	}
	if n == 0 {
		return driver.ErrLeaseLost
	}
	return nil
}

// Ack makes the copy finished: its data dropped, its row kept until
// pruned for its unique key and the ack count.
func (u *subscription) Ack(ctx context.Context, d *driver.Delivery) error {
	return u.fenced(ctx, d, `state = 2, run_at = ?3, data = x'', header = NULL`)
}

// Retry makes the copy ready again after delay.
func (u *subscription) Retry(ctx context.Context, d *driver.Delivery, delay time.Duration, reason string) error {
	err := u.fenced(ctx, d, `state = 0, run_at = ?3 + ?4, last_error = coalesce(nullif(?5, ''), last_error)`, micros(delay), reason)
	if err == nil && delay <= 0 {
		u.s.notify()
	}
	return err
}

// Dead makes the copy dead.
func (u *subscription) Dead(ctx context.Context, d *driver.Delivery, reason string) error {
	return u.fenced(ctx, d, `state = 3, run_at = ?3, last_error = coalesce(nullif(?4, ''), last_error)`, reason)
}

// Extend moves the lease's end to now+by.
func (u *subscription) Extend(ctx context.Context, d *driver.Delivery, by time.Duration) error {
	return u.fenced(ctx, d, `run_at = ?3 + ?4`, micros(by))
}

// Release gives the copy back, due now, its attempt not counted.
func (u *subscription) Release(ctx context.Context, d *driver.Delivery) error {
	err := u.fenced(ctx, d, `state = 0, run_at = ?3, attempt = attempt - 1`)
	if err == nil {
		u.s.notify()
	}
	return err
}
