package sqlitepubsub

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// topic is the store's side of one topic: its publishes.
type topic struct {
	s    *store
	name string
}

var (
	_ driver.Topic          = (*topic)(nil)
	_ driver.BatchPublisher = (*topic)(nil)
)

// insert adds one copy of a message per subscription of the topic, or
// one for the default subscription while the topic has none; a copy
// whose subscription keeps the unique key already is not added.
const insert = `INSERT INTO conveyor_messages (topic, sub, run_at, created_at, ukey, header, data)
	SELECT ?1, s.name, ?2, ?3, ?4, ?5, ?6 FROM (
		SELECT name FROM conveyor_subscriptions WHERE topic = ?1
		UNION ALL
		SELECT 'default' WHERE NOT EXISTS (SELECT 1 FROM conveyor_subscriptions WHERE topic = ?1)
	) AS s WHERE true
	ON CONFLICT (topic, sub, ukey) WHERE ukey IS NOT NULL DO NOTHING`

// execer is what an insert runs on: the store's pool or the caller's
// transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Publish adds m to the topic's subscriptions, in the caller's transaction
// when m.Tx is one on the store's file.
func (t *topic) Publish(ctx context.Context, _ <-chan struct{}, m driver.Outgoing) (bool, error) {
	header, err := encodeHeader(m.Header)
	if err != nil {
		return false, err
	}
	t0 := now()
	runAt := t0
	if !m.At.IsZero() && m.At.UnixMicro() > t0 {
		runAt = m.At.UnixMicro()
	}
	var key any
	if m.Key != "" {
		key = m.Key
	}
	data := m.Data
	if data == nil {
		data = []byte{} // data is NOT NULL: an empty payload is x''
	}
	var added int64
	do := func(ctx context.Context, ex execer) error {
		res, err := ex.ExecContext(ctx, insert, t.name, runAt, t0, key, header, data)
		if err != nil {
			return err
		}
		added, err = res.RowsAffected()
		return err
	}
	if m.Tx != nil {
		tx, err := t.s.txOf(ctx, m.Tx)
		if err != nil {
			return false, err
		}
		// The caller's transaction: the message exists when it commits,
		// and consumers find it by polling (nothing here knows when).
		return added > 0, classify(ctx, do(ctx, tx))
	}
	if err := t.s.group(ctx, &op{exec: func(ctx context.Context, c *sql.Conn) error { return do(ctx, c) }}); err != nil {
		return false, err
	}
	if added > 0 && runAt == t0 {
		t.s.notify()
	}
	return added > 0, nil
}

// PublishBatch adds every message of b, in order, all or none: in one
// immediate transaction, or in the caller's.
func (t *topic) PublishBatch(ctx context.Context, _ <-chan struct{}, b driver.Batch) error {
	header, err := encodeHeader(b.Header)
	if err != nil {
		return err
	}
	t0 := now()
	do := func(ctx context.Context, ex interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	}) error {
		st, err := ex.PrepareContext(ctx, insert)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, d := range b.Data {
			if d == nil {
				d = []byte{}
			}
			if _, err := st.ExecContext(ctx, t.name, t0, t0, nil, header, d); err != nil {
				return err
			}
		}
		return nil
	}
	if b.Tx != nil {
		tx, err := t.s.txOf(ctx, b.Tx)
		if err != nil {
			return err
		}
		return classify(ctx, do(ctx, tx))
	}
	err = t.s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error { return do(ctx, c) })
	if err == nil {
		t.s.notify()
	}
	return err
}

// Subscription returns the consumer side of subscription name.
func (t *topic) Subscription(name string) driver.Subscription {
	return &subscription{s: t.s, topic: t.name, name: name}
}

// encodeHeader returns h as the JSON object the header column keeps, nil
// for none.
func encodeHeader(h pubsub.Header) (any, error) {
	if h == nil {
		return nil, nil
	}
	b, err := json.Marshal(map[string]string(h))
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// decodeHeader is encodeHeader's inverse.
func decodeHeader(s sql.NullString) (pubsub.Header, error) {
	if !s.Valid {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(s.String), &h); err != nil {
		return nil, err
	}
	return pubsub.Header(h), nil
}

// formatID is a row's message ID.
func formatID(id int64) string { return strconv.FormatInt(id, 10) }

// parseID is formatID's inverse; an error wrapping admin.ErrInvalidID
// for a string that cannot be one.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || formatID(id) != s {
		return 0, fmt.Errorf("%w: %q is not a positive decimal integer", admin.ErrInvalidID, s)
	}
	return id, nil
}

// micros is d in the store's unit.
func micros(d time.Duration) int64 { return d.Microseconds() }
