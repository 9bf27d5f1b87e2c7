package dbpubsub

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// eventRow is a row of the message table, for the cold paths (inspection
// and dead letters), which use bun's query builder.
type eventRow struct {
	bun.BaseModel `bun:"table:conveyor_events,alias:e"`

	ID         int64      `bun:"id,pk"`
	Topic      string     `bun:"topic"`
	Status     string     `bun:"status"`
	RunAt      time.Time  `bun:"run_at"`
	Data       []byte     `bun:"data"`
	Attempts   int        `bun:"attempts"`
	LastError  *string    `bun:"last_error"`
	FinishedAt *time.Time `bun:"finished_at"`
	Headers    string     `bun:"headers"` // its text form; "" if none
}

// table is the message table for bun's ModelTableExpr.
func (ps *store) table() bun.Ident { return bun.Ident(ps.opts.Table) }

// ListDead returns up to limit dead messages (all if limit <= 0), oldest
// death first, with the reason of their last failure.
func (st *topicState) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	ps := st.ps
	var rows []eventRow
	q := ps.db.NewSelect().Model(&rows).ModelTableExpr("? AS e", ps.table()).
		Column("id", "data", "attempts", "last_error", "finished_at").ColumnExpr("headers::text AS headers").
		Where("topic = ?", st.name).Where("status = ?", statusDead).
		Order("finished_at", "id")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]admin.DeadMessage, len(rows))
	for i, r := range rows {
		out[i] = admin.DeadMessage{ID: strconv.FormatInt(r.ID, 10), Data: r.Data, Attempts: r.Attempts}
		if r.Headers != "" {
			out[i].Header = st.decodeHeader(r.ID, []byte(r.Headers))
		}
		if r.LastError != nil {
			out[i].LastError = *r.LastError
		}
		if r.FinishedAt != nil {
			out[i].DiedAt = *r.FinishedAt
		}
	}
	return out, nil
}

// RequeueDead makes the dead message id ready again with a fresh attempt
// count. It wraps admin.ErrNotFound when id is not a dead message of the
// topic, and admin.ErrInvalidID too when id cannot be a message ID.
func (st *topicState) RequeueDead(ctx context.Context, id string) error {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("%w (%w)", admin.ErrInvalidID, admin.ErrNotFound)
	}
	count, err := st.requeue(ctx, func(q *bun.UpdateQuery) *bun.UpdateQuery { return q.Where("id = ?", n) })
	if err != nil {
		return err
	}
	if count == 0 {
		return fmt.Errorf("no dead message with that ID: %w", admin.ErrNotFound)
	}
	return nil
}

// RequeueAllDead makes every dead message of the topic ready again and
// says how many.
func (st *topicState) RequeueAllDead(ctx context.Context) (int, error) {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	n, err := st.requeue(ctx, func(q *bun.UpdateQuery) *bun.UpdateQuery { return q })
	if err != nil {
		return 0, err
	}
	return n, nil
}

// requeue makes the dead rows of the topic that where selects ready, and
// notifies the topic's consumers in the same transaction.
func (st *topicState) requeue(ctx context.Context, where func(*bun.UpdateQuery) *bun.UpdateQuery) (int, error) {
	ps := st.ps
	ch, err := st.channel(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	err = ps.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().ModelTableExpr("?", ps.table()).
			Set("status = ?", statusPending).
			Set("attempts = 0").
			Set("last_error = NULL").
			Set("finished_at = NULL").
			Set("run_at = now()").
			Where("topic = ?", st.name).Where("status = ?", statusDead)
		res, err := where(q).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.NewRaw("SELECT pg_notify(?, '')", ch).Exec(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		st.wake()
	}
	return int(n), nil
}

// PurgeDead deletes every dead message of the topic for good and says how
// many.
func (st *topicState) PurgeDead(ctx context.Context) (int, error) {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	ps := st.ps
	res, err := ps.db.NewDelete().TableExpr("?", ps.table()).
		Where("topic = ?", st.name).Where("status = ?", statusDead).Exec(ctx)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// Stats counts the topic's messages by state, as the database sees them:
// rows claimed by a PubSub for its waiting consumers count as processing.
// Finished rows not yet pruned are not counted. The acks this PubSub
// queued before the call (see Options.ConfirmAck) are written first.
func (st *topicState) Stats(ctx context.Context) (admin.Stats, error) {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	ps := st.ps
	if err := ps.Flush(ctx); err != nil {
		return admin.Stats{}, err
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return admin.Stats{}, err
	}
	var r struct {
		Ready, Scheduled, Processing, Dead int64
		OldestReadyUS                      float64
	}
	// One sub-query per state, each served by an index, so that the
	// finished rows kept for the retention period are never scanned. Ready
	// messages are the rows of the topic's ready table and the message
	// table's due pending ones; the ready table's oldest is its first by
	// id.
	tbl, rdy, name := ps.table(), bun.Safe(m.ready), st.name
	err = ps.db.NewRaw(`SELECT
		(SELECT count(*) FROM ? WHERE topic = ? AND status = 'pending' AND run_at <= now()) +
			(SELECT count(*) FROM ?),
		(SELECT count(*) FROM ? WHERE topic = ? AND status = 'pending' AND run_at > now()),
		(SELECT count(*) FROM ? WHERE topic = ? AND status = 'processing'),
		(SELECT count(*) FROM ? WHERE topic = ? AND status = 'dead'),
		coalesce((SELECT extract(epoch FROM now() - least(
			(SELECT min(run_at) FROM ? WHERE topic = ? AND status = 'pending' AND run_at <= now()),
			(SELECT created_at FROM ? ORDER BY id LIMIT 1))) * 1e6), 0)`,
		tbl, name, rdy, tbl, name, tbl, name, tbl, name, tbl, name, rdy).
		Scan(ctx, &r.Ready, &r.Scheduled, &r.Processing, &r.Dead, &r.OldestReadyUS)
	if err != nil {
		return admin.Stats{}, err
	}
	return admin.Stats{
		Ready:       r.Ready,
		Scheduled:   r.Scheduled,
		Processing:  r.Processing,
		Dead:        r.Dead,
		OldestReady: time.Duration(r.OldestReadyUS) * time.Microsecond,
	}, nil
}
