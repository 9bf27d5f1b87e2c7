package sqlitepubsub

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var (
	_ driver.DeadLetters = (*subscription)(nil)
	_ driver.DeadDeleter = (*subscription)(nil)
	_ driver.Stater      = (*subscription)(nil)
	_ driver.Peeker      = (*subscription)(nil)
	_ driver.Canceler    = (*subscription)(nil)
	_ driver.AckCounter  = (*subscription)(nil)
)

// columns are what a look at a row reads, in scanRow's order.
const columns = `id, state, run_at, attempt, created_at, coalesce(last_error, ''), header, length(data), substr(data, 1, ?3)`

// scanRow reads a row of columns.
func scanRow(sc interface{ Scan(...any) error }, t int64) (admin.MessageInfo, error) {
	var (
		m                    admin.MessageInfo
		id, runAt, createdAt int64
		state                int
		header               sql.NullString
	)
	if err := sc.Scan(&id, &state, &runAt, &m.Attempts, &createdAt, &m.LastError, &header, &m.Size, &m.Preview); err != nil {
		return m, err
	}
	h, err := decodeHeader(header)
	if err != nil {
		return m, fmt.Errorf("message %d: header: %w", id, err)
	}
	m.ID, m.Header = formatID(id), h
	m.RunAt, m.CreatedAt = time.UnixMicro(runAt), time.UnixMicro(createdAt)
	m.State = stateOf(state, runAt, t)
	if m.Preview == nil {
		m.Preview = []byte{}
	}
	return m, nil
}

func stateOf(state int, runAt, t int64) admin.MessageState {
	switch {
	case state == 1:
		return admin.StateProcessing
	case state == 3:
		return admin.StateDead
	case runAt > t:
		return admin.StateScheduled
	}
	return admin.StateReady
}

// where selects the subscription's rows in a state of pubsub (?1 topic,
// ?2 sub, ?4 now).
func where(s admin.MessageState) string {
	switch s {
	case admin.StateReady:
		return `state = 0 AND run_at <= ?4`
	case admin.StateScheduled:
		return `state = 0 AND run_at > ?4`
	case admin.StateProcessing:
		return `state = 1`
	}
	return `state = 3`
}

// Peek returns a page of the subscription's copies in opts.State, in the
// order of their IDs (the order of their enqueues); the cursor is the
// last ID of the page.
func (u *subscription) Peek(ctx context.Context, opts admin.PeekOptions) (admin.PeekPage, error) {
	var after int64
	if opts.After != "" {
		id, err := parseID(opts.After)
		if err != nil {
			return admin.PeekPage{}, fmt.Errorf("%w: %q", admin.ErrInvalidCursor, opts.After)
		}
		after = id
	}
	page := admin.PeekPage{Messages: []admin.MessageInfo{}}
	err := u.s.read(ctx, func(ctx context.Context) error {
		page.Messages = page.Messages[:0]
		t := now()
		rows, err := u.s.sqldb.QueryContext(ctx, `SELECT `+columns+` FROM conveyor_messages
			WHERE topic = ?1 AND sub = ?2 AND `+where(opts.State)+` AND id > ?5 ORDER BY id LIMIT ?6`,
			u.topic, u.name, admin.PreviewSize, t, after, opts.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanRow(rows, t)
			if err != nil {
				return err
			}
			page.Messages = append(page.Messages, m)
		}
		return rows.Err()
	})
	if err != nil {
		return admin.PeekPage{}, err
	}
	if len(page.Messages) > opts.Limit {
		page.Messages = page.Messages[:opts.Limit]
		page.Next = page.Messages[opts.Limit-1].ID
	}
	return page, nil
}

// Message returns the subscription's copy id, unless finished, with its
// data.
func (u *subscription) Message(ctx context.Context, id string) (admin.MessageInfo, []byte, error) {
	n, err := parseID(id)
	if err != nil {
		return admin.MessageInfo{}, nil, err
	}
	var (
		m    admin.MessageInfo
		data []byte
	)
	err = u.s.read(ctx, func(ctx context.Context) error {
		t := now()
		row := u.s.sqldb.QueryRowContext(ctx, `SELECT `+columns+`, data FROM conveyor_messages
			WHERE topic = ?1 AND sub = ?2 AND id = ?4 AND state <> 2`, u.topic, u.name, admin.PreviewSize, n)
		var err error
		m, err = scanRow(scanner{row, &data}, t)
		return err
	})
	if isNoRows(err) {
		return m, nil, fmt.Errorf("%w: %s", admin.ErrNotFound, id)
	}
	if data == nil {
		data = []byte{}
	}
	return m, data, err
}

// scanner appends a destination to a row's scan.
type scanner struct {
	row  *sql.Row
	last *[]byte
}

func (s scanner) Scan(dest ...any) error { return s.row.Scan(append(dest, s.last)...) }

// Cancel deletes the ready or scheduled copy id.
func (u *subscription) Cancel(ctx context.Context, id string) error {
	return u.deleteIn(ctx, id, "state = 0", admin.StateReady)
}

// DeleteDead deletes the dead copy id.
func (u *subscription) DeleteDead(ctx context.Context, id string) error {
	return u.deleteIn(ctx, id, "state = 3", admin.StateDead)
}

// deleteIn deletes the copy id if it is in the state cond says; otherwise
// an error wrapping admin.ErrWrongState (for a copy in another state) or
// admin.ErrNotFound.
func (u *subscription) deleteIn(ctx context.Context, id, cond string, want admin.MessageState) error {
	n, err := parseID(id)
	if err != nil {
		return err
	}
	var state int = -1
	err = u.s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		state = -1
		res, err := c.ExecContext(ctx, `DELETE FROM conveyor_messages WHERE topic = ? AND sub = ? AND id = ? AND `+cond, u.topic, u.name, n)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k > 0 {
			state = -2
			return err
		}
		err = c.QueryRowContext(ctx, `SELECT state FROM conveyor_messages WHERE topic = ? AND sub = ? AND id = ?`, u.topic, u.name, n).Scan(&state)
		if isNoRows(err) {
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case state == -2:
		return nil
	case state == -1 || state == 2 || (want == admin.StateDead && state != 3):
		return fmt.Errorf("%w: %s", admin.ErrNotFound, id)
	}
	return fmt.Errorf("%w: message %s is %s", admin.ErrWrongState, id, stateOf(state, 0, 0))
}

// ListDead lists up to limit dead copies (all when limit <= 0), oldest
// death first.
func (u *subscription) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	if limit <= 0 {
		limit = -1
	}
	var out []admin.DeadMessage
	err := u.s.read(ctx, func(ctx context.Context) error {
		out = out[:0]
		rows, err := u.s.sqldb.QueryContext(ctx, `SELECT id, attempt, coalesce(last_error, ''), run_at, header, data
			FROM conveyor_messages WHERE topic = ? AND sub = ? AND state = 3 ORDER BY run_at, id LIMIT ?`, u.topic, u.name, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				d      admin.DeadMessage
				id, at int64
				header sql.NullString
			)
			if err := rows.Scan(&id, &d.Attempts, &d.LastError, &at, &header, &d.Data); err != nil {
				return err
			}
			if d.Header, err = decodeHeader(header); err != nil {
				return fmt.Errorf("message %d: header: %w", id, err)
			}
			d.ID, d.DiedAt = formatID(id), time.UnixMicro(at)
			if d.Data == nil {
				d.Data = []byte{}
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// RequeueDead makes the dead copy id ready now, its attempts counted
// anew.
func (u *subscription) RequeueDead(ctx context.Context, id string) error {
	n, err := parseID(id)
	if err != nil {
		return fmt.Errorf("%w (%w)", admin.ErrNotFound, err)
	}
	k, err := u.requeue(ctx, `AND id = ?4`, n)
	if err == nil && k == 0 {
		return fmt.Errorf("%w: no dead message %s", admin.ErrNotFound, id)
	}
	return err
}

// RequeueAllDead makes every dead copy ready now.
func (u *subscription) RequeueAllDead(ctx context.Context) (int, error) {
	k, err := u.requeue(ctx, ``)
	return int(k), err
}

func (u *subscription) requeue(ctx context.Context, cond string, args ...any) (int64, error) {
	var k int64
	err := u.s.write(ctx, func(ctx context.Context) error {
		res, err := u.s.sqldb.ExecContext(ctx, `UPDATE conveyor_messages SET state = 0, run_at = ?3, attempt = 0
			WHERE topic = ?1 AND sub = ?2 AND state = 3 `+cond, append([]any{u.topic, u.name, now()}, args...)...)
		if err != nil {
			return err
		}
		k, err = res.RowsAffected()
		return err
	})
	if err == nil && k > 0 {
		u.s.notify()
	}
	return k, err
}

// PurgeDead deletes every dead copy.
func (u *subscription) PurgeDead(ctx context.Context) (int, error) {
	var k int64
	err := u.s.write(ctx, func(ctx context.Context) error {
		res, err := u.s.sqldb.ExecContext(ctx, `DELETE FROM conveyor_messages WHERE topic = ? AND sub = ? AND state = 3`, u.topic, u.name)
		if err != nil {
			return err
		}
		k, err = res.RowsAffected()
		return err
	})
	return int(k), err
}

// Stats counts the subscription's copies by state; OldestReady is how
// long the oldest ready one has been due.
func (u *subscription) Stats(ctx context.Context) (admin.Stats, error) {
	var st admin.Stats
	err := u.s.read(ctx, func(ctx context.Context) error {
		t := now()
		var oldest sql.NullInt64
		err := u.s.sqldb.QueryRowContext(ctx, `SELECT
				count(*) FILTER (WHERE state = 0 AND run_at <= ?3),
				count(*) FILTER (WHERE state = 0 AND run_at > ?3),
				count(*) FILTER (WHERE state = 1),
				count(*) FILTER (WHERE state = 3),
				min(run_at) FILTER (WHERE state = 0 AND run_at <= ?3)
			FROM conveyor_messages WHERE topic = ?1 AND sub = ?2 AND state IN (0, 1, 3)`, u.topic, u.name, t).
			Scan(&st.Ready, &st.Scheduled, &st.Processing, &st.Dead, &oldest)
		if oldest.Valid {
			st.OldestReady = time.Duration(t-oldest.Int64) * time.Microsecond
		}
		return err
	})
	return st, err
}

// AckedSince counts the copies acked at or after since that are not
// pruned yet (Options.Retention).
func (u *subscription) AckedSince(ctx context.Context, since time.Time) (int64, error) {
	var n int64
	err := u.s.read(ctx, func(ctx context.Context) error {
		return u.s.sqldb.QueryRowContext(ctx, `SELECT count(*) FROM conveyor_messages
			WHERE topic = ? AND sub = ? AND state = 2 AND run_at >= ?`, u.topic, u.name, since.UnixMicro()).Scan(&n)
	})
	return n, err
}
