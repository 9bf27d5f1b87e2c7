package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Inspection and repair (admin.TopicLister, Peeker, Canceler,
// DeadDeleter). Every statement here is bounded (LIMIT, or one id) and
// served by an index, so that a page costs the same with millions of
// finished rows kept:
//
//	ready      the due pending rows of the message table by (run_at, id)
//	           (the claim index), then the rows of the queue's ready table
//	           by id (its primary key): the order of delivery
//	scheduled  the pending rows not yet due by (run_at, id) (the claim index)
//	processing by id (the lease index holds the processing rows only)
//	dead       by (finished_at, id), oldest death first (the dead index)
//
// Rows claimed by a process for its consumers (buffered, see fetcher.go)
// are processing: Cancel refuses them, as it refuses a delivery in hand.

// Topics returns every topic the database keeps (each that was used
// through dbpubsub: it has a ready table), with its subscriptions.
func (ps *store) Topics(ctx context.Context) ([]admin.TopicInfo, error) {
	if ps.closing() {
		return nil, pubsub.ErrClosed
	}
	if _, err := ps.qualifiedTable(ctx); err != nil {
		return nil, err
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	// The registry names queues: a topic, or a topic, U+001F and a
	// subscription (queueName).
	q := fmt.Sprintf(`SELECT split_part(topic, chr(31), 1), NULL FROM %s
		UNION SELECT topic, name FROM %s`,
		quoteIdent(ps.opts.Table+"_topics"), quoteIdent(ps.opts.Table+"_subscriptions"))
	rows, err := ps.sqldb.QueryContext(sctx, q)
	if err != nil {
		return nil, ctxErr(ctx, notMigrated(ps, err, "list topics"))
	}
	defer rows.Close()
	subs := map[string][]string{}
	for rows.Next() {
		var topic string
		var sub sql.NullString
		if err := rows.Scan(&topic, &sub); err != nil {
			return nil, err
		}
		if sub.Valid {
			subs[topic] = append(subs[topic], sub.String)
		} else if _, ok := subs[topic]; !ok {
			subs[topic] = nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	out := make([]admin.TopicInfo, 0, len(subs))
	for topic, names := range subs {
		slices.Sort(names)
		if names == nil {
			names = []string{}
		}
		out = append(out, admin.TopicInfo{Name: topic, Subscriptions: names})
	}
	slices.SortFunc(out, func(a, b admin.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// preview is the column of a row's preview (admin.PreviewSize bytes).
var preview = fmt.Sprintf("substring(data FROM 1 FOR %d)", admin.PreviewSize)

// infoColumns are the columns of a row of the message table that make a
// MessageInfo (scanInfo), {AT} standing for its time.
var infoColumns = `id, attempts, {AT}, created_at, coalesce(last_error, ''), octet_length(data), ` + preview + `, headers`

// Peek returns a page of the subscription's messages in opts.State, in
// the orders described above, as the database sees them after the acks
// this PubSub queued before the call are written (Options.ConfirmAck). Its cursor is the last row's key, prefixed
// by where it was found.
func (st *topicState) Peek(ctx context.Context, opts admin.PeekOptions) (admin.PeekPage, error) {
	opts, err := opts.Normalized()
	if err != nil {
		return admin.PeekPage{}, err
	}
	ps := st.ps
	fail := func(err error) (admin.PeekPage, error) {
		return admin.PeekPage{}, ctxErr(ctx, err)
	}
	c, err := parseCursor(opts.State, opts.After)
	if err != nil {
		return fail(err)
	}
	if err := ps.Flush(ctx); err != nil { // the acks queued before the call
		return fail(err)
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return fail(err)
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	tbl, n := quoteIdent(ps.opts.Table), opts.Limit+1 // one more tells whether a next page exists
	cols := func(at string) string { return strings.Replace(infoColumns, "{AT}", at, 1) }
	var infos []admin.MessageInfo
	var keys []cursor
	query := func(kind byte, state admin.MessageState, q string, args ...any) error {
		rows, err := ps.sqldb.QueryContext(sctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			info, at, err := st.scanInfo(rows, state)
			if err != nil {
				return err
			}
			id, _ := strconv.ParseInt(info.ID, 10, 64)
			infos, keys = append(infos, info), append(keys, cursor{kind: kind, at: at, id: id})
		}
		return rows.Err()
	}
	switch opts.State {
	case admin.StateReady:
		if c.kind != 'r' {
			err = query('m', opts.State, `SELECT `+cols("run_at")+` FROM `+tbl+`
				WHERE topic = $1 AND status = 'pending' AND run_at <= now() AND (topic, run_at, id) > ($1, $2, $3)
				ORDER BY run_at, id LIMIT $4`, st.name, c.at, c.id, n)
			c = cursor{kind: 'r'}
		}
		if err == nil && len(infos) < n {
			err = query('r', opts.State, `SELECT id, 0, created_at, created_at, '', octet_length(data), `+preview+`, headers FROM `+m.ready+`
				WHERE id > $1 ORDER BY id LIMIT $2`, c.id, n-len(infos))
		}
	case admin.StateScheduled:
		err = query('s', opts.State, `SELECT `+cols("run_at")+` FROM `+tbl+`
			WHERE topic = $1 AND status = 'pending' AND run_at > now() AND (topic, run_at, id) > ($1, $2, $3)
			ORDER BY run_at, id LIMIT $4`, st.name, c.at, c.id, n)
	case admin.StateProcessing:
		err = query('p', opts.State, `SELECT `+cols("lease_until")+` FROM `+tbl+`
			WHERE topic = $1 AND status = 'processing' AND id > $2
			ORDER BY id LIMIT $3`, st.name, c.id, n)
	case admin.StateDead:
		err = query('d', opts.State, `SELECT `+cols("finished_at")+` FROM `+tbl+`
			WHERE topic = $1 AND status = 'dead' AND (topic, finished_at, id) > ($1, $2, $3)
			ORDER BY finished_at, id LIMIT $4`, st.name, c.at, c.id, n)
	}
	if err != nil {
		return fail(err)
	}
	page := admin.PeekPage{Messages: infos}
	if len(infos) > opts.Limit {
		page.Messages = infos[:opts.Limit]
		page.Next = keys[opts.Limit-1].String()
	}
	return page, nil
}

// scanInfo scans a row of infoColumns into a MessageInfo in state, and
// returns its time (the key of the orders by time) too.
func (st *topicState) scanInfo(rows interface{ Scan(...any) error }, state admin.MessageState) (admin.MessageInfo, time.Time, error) {
	var (
		info   admin.MessageInfo
		id     int64
		at     sql.NullTime
		header []byte
	)
	if err := rows.Scan(&id, &info.Attempts, &at, &info.CreatedAt, &info.LastError, &info.Size, &info.Preview, &header); err != nil {
		return info, time.Time{}, err
	}
	info.ID, info.State, info.RunAt = strconv.FormatInt(id, 10), state, at.Time
	if info.Preview == nil {
		info.Preview = []byte{}
	}
	if len(header) > 0 {
		info.Header = st.decodeHeader(id, header)
	}
	return info, at.Time, nil
}

// cursor is the key of the last row of a page: where it was found (kind:
// 'm' the message table's ready rows, 'r' the ready table, 's', 'p', 'd'
// the other states) and its order's columns.
type cursor struct {
	kind byte
	at   time.Time
	id   int64
}

// String is the cursor as PeekPage.Next: kind, the time in µs since the
// epoch, the id.
func (c cursor) String() string {
	return fmt.Sprintf("%c%d.%d", c.kind, c.at.UnixMicro(), c.id)
}

// firstKey is before every (run_at, id): no message is due before it.
var firstKey = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// parseCursor reads s, the cursor of a page of state; "" is before the
// first row.
func parseCursor(state admin.MessageState, s string) (cursor, error) {
	if s == "" {
		return cursor{at: firstKey}, nil
	}
	kinds := map[admin.MessageState]string{admin.StateReady: "mr", admin.StateScheduled: "s",
		admin.StateProcessing: "p", admin.StateDead: "d"}[state]
	us, id, ok := strings.Cut(s[1:], ".")
	c := cursor{kind: s[0]}
	var err1, err2 error
	var micros int64
	if ok {
		micros, err1 = strconv.ParseInt(us, 10, 64)
		c.id, err2 = strconv.ParseInt(id, 10, 64)
	}
	if !ok || err1 != nil || err2 != nil || !strings.ContainsRune(kinds, rune(c.kind)) {
		return cursor{}, fmt.Errorf("%w %q for state %s", admin.ErrInvalidCursor, s, state)
	}
	c.at = time.UnixMicro(micros)
	return c, nil
}

// parseID reads a message ID: the row's id.
func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q: not an integer", admin.ErrInvalidID, id)
	}
	return n, nil
}

// Message returns the message id of the subscription, unsettled or dead,
// and its data. As Peek, it writes the acks this PubSub queued before the
// call first (Options.ConfirmAck).
func (st *topicState) Message(ctx context.Context, id string) (admin.MessageInfo, []byte, error) {
	ps := st.ps
	n, wrap, err := st.byID(ctx, "message", id)
	fail := func(err error) (admin.MessageInfo, []byte, error) { return admin.MessageInfo{}, nil, wrap(err) }
	if err != nil {
		return admin.MessageInfo{}, nil, err
	}
	if err := ps.Flush(ctx); err != nil { // the acks queued before the call
		return fail(err)
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return fail(err)
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	q := `SELECT 'ready', id, 0, created_at, created_at, '', octet_length(data), data, headers FROM ` + m.ready + ` WHERE id = $1
		UNION ALL
		SELECT CASE WHEN status = 'pending' AND run_at > now() THEN 'scheduled' WHEN status = 'pending' THEN 'ready' ELSE status END,
			id, attempts, CASE status WHEN 'processing' THEN lease_until WHEN 'dead' THEN finished_at ELSE run_at END,
			created_at, coalesce(last_error, ''), octet_length(data), data, headers
		FROM ` + quoteIdent(ps.opts.Table) + ` WHERE id = $1 AND topic = $2 AND status <> 'finished'
		LIMIT 1`
	var (
		info   admin.MessageInfo
		state  string
		at     sql.NullTime
		data   []byte
		header []byte
	)
	err = ps.sqldb.QueryRowContext(sctx, q, n, st.name).Scan(&state, &n, &info.Attempts, &at, &info.CreatedAt,
		&info.LastError, &info.Size, &data, &header)
	if errors.Is(err, sql.ErrNoRows) {
		return fail(admin.ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if data == nil {
		data = []byte{}
	}
	info.ID, info.State, info.RunAt, info.Preview = id, admin.MessageState(state), at.Time, admin.PreviewOf(data)
	if len(header) > 0 {
		info.Header = st.decodeHeader(n, header)
	}
	return info, data, nil
}

// Cancel deletes the ready or scheduled message id of the subscription,
// in one statement: from its ready table, or, pending, from the message
// table. A row claimed meanwhile is processing, and stays.
func (st *topicState) Cancel(ctx context.Context, id string) error {
	ps := st.ps
	n, fail, err := st.byID(ctx, "cancel message", id)
	if err != nil {
		return err
	}
	m, err := st.lookup(ctx)
	if err != nil {
		return fail(err)
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	tbl := quoteIdent(ps.opts.Table)
	var deleted int
	var status sql.NullString
	err = ps.sqldb.QueryRowContext(sctx, `WITH r AS (DELETE FROM `+m.ready+` WHERE id = $1 RETURNING id),
			p AS (DELETE FROM `+tbl+` WHERE id = $1 AND topic = $2 AND status = 'pending' RETURNING id)
		SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM p), (SELECT status FROM `+tbl+` WHERE id = $1 AND topic = $2)`,
		n, st.name).Scan(&deleted, &status)
	if err == nil && deleted == 0 && !status.Valid {
		// A claim may have moved the row out of the ready table after the
		// statement's snapshot: look again.
		err = ps.sqldb.QueryRowContext(sctx, `SELECT status FROM `+tbl+` WHERE id = $1 AND topic = $2`, n, st.name).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	switch {
	case err != nil:
		return fail(err)
	case deleted > 0:
		return nil
	case status.String == statusProcessing || status.String == statusDead:
		return fail(fmt.Errorf("%w: it is %s", admin.ErrWrongState, status.String))
	}
	return fail(admin.ErrNotFound)
}

// DeleteDead deletes the dead message id of the subscription for good.
func (st *topicState) DeleteDead(ctx context.Context, id string) error {
	ps := st.ps
	n, fail, err := st.byID(ctx, "delete dead message", id)
	if err != nil {
		return err
	}
	sctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	res, err := ps.sqldb.ExecContext(sctx, `DELETE FROM `+quoteIdent(ps.opts.Table)+` WHERE id = $1 AND topic = $2 AND status = 'dead'`, n, st.name)
	if err != nil {
		return fail(err)
	}
	if k, err := res.RowsAffected(); err != nil {
		return fail(err)
	} else if k == 0 {
		return fail(fmt.Errorf("no dead message with that ID: %w", admin.ErrNotFound))
	}
	return nil
}

// byID begins a call on message id of the subscription: it checks the
// handle, parses id, and returns wrap, which names the call (op), the
// message and the subscription in an error. err is already wrapped.
func (st *topicState) byID(ctx context.Context, op, id string) (n int64, wrap func(error) error, err error) {
	wrap = func(err error) error {
		return ctxErr(ctx, err)
	}
	if n, err = parseID(id); err != nil {
		return 0, wrap, wrap(err)
	}
	return n, wrap, nil
}
