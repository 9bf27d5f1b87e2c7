package sqlitepubsub

import (
	"context"
	"database/sql"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Subscribe makes sub one of topic's subscriptions unless it is one, for
// every process on the file, keeping cfg's retry policy when it is the
// subscription's own, and returns the configuration the subscription has.
// Subscribing the default subscription keeps the copies it has.
func (s *store) Subscribe(ctx context.Context, topic, sub string, cfg driver.SubscriptionConfig) (driver.SubscriptionConfig, error) {
	var maxAttempts, minBackoff, maxBackoff, jitter any
	if cfg.Own {
		p := cfg.Retry
		maxAttempts, minBackoff, maxBackoff, jitter = p.MaxAttempts, int64(p.MinBackoff), int64(p.MaxBackoff), p.Jitter
	}
	var got driver.SubscriptionConfig
	err := s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `INSERT INTO conveyor_subscriptions
			(topic, name, created_at, retry_max_attempts, retry_min_backoff_ns, retry_max_backoff_ns, retry_jitter)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			topic, sub, now(), maxAttempts, minBackoff, maxBackoff, jitter); err != nil {
			return err
		}
		var err error
		got, err = s.config(ctx, c, topic, sub)
		return err
	})
	return got, err
}

// querier is a connection or the pool.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// config returns the configuration of the subscription sub, which exists.
func (s *store) config(ctx context.Context, q querier, topic, sub string) (driver.SubscriptionConfig, error) {
	var (
		maxAttempts, minBackoff, maxBackoff sql.NullInt64
		jitter                              sql.NullFloat64
	)
	err := q.QueryRowContext(ctx, `SELECT retry_max_attempts, retry_min_backoff_ns, retry_max_backoff_ns, retry_jitter
		FROM conveyor_subscriptions WHERE topic = ? AND name = ?`, topic, sub).Scan(&maxAttempts, &minBackoff, &maxBackoff, &jitter)
	if err != nil {
		return driver.SubscriptionConfig{}, err
	}
	cfg := driver.SubscriptionConfig{Retry: s.env.Defaults.Retry, Lease: s.env.Defaults.Lease}
	if maxAttempts.Valid {
		cfg.Own = true
		cfg.Retry = pubsub.RetryPolicy{MaxAttempts: int(maxAttempts.Int64), MinBackoff: time.Duration(minBackoff.Int64),
			MaxBackoff: time.Duration(maxBackoff.Int64), Jitter: jitter.Float64}
	}
	return cfg, nil
}

// Subscriptions lists topic's subscriptions, sorted.
func (s *store) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	names := []string{}
	err := s.read(ctx, func(ctx context.Context) error {
		names = names[:0]
		rows, err := s.sqldb.QueryContext(ctx, `SELECT name FROM conveyor_subscriptions WHERE topic = ? ORDER BY name`, topic)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return rows.Err()
	})
	return names, err
}

// DeleteSubscription deletes sub of topic with its copies, its pause and
// its inbox, in one transaction; deliveries of it in hand then fail to
// settle (their rows are gone).
func (s *store) DeleteSubscription(ctx context.Context, topic, sub string) error {
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		res, err := c.ExecContext(ctx, `DELETE FROM conveyor_subscriptions WHERE topic = ? AND name = ?`, topic, sub)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		for _, q := range []string{
			`DELETE FROM conveyor_messages WHERE topic = ? AND sub = ?`,
			`DELETE FROM conveyor_pauses WHERE topic = ? AND sub = ?`,
			`DELETE FROM conveyor_inbox WHERE topic = ? AND sub = ?`,
		} {
			if _, err := c.ExecContext(ctx, q, topic, sub); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && n == 0 {
		return pubsub.ErrNoSubscription
	}
	if err == nil && sub == pubsub.DefaultSubscription {
		s.declared.Delete(topic)
	}
	return err
}

// Topics lists every topic with messages or subscriptions in the file,
// sorted, with its subscriptions.
func (s *store) Topics(ctx context.Context) ([]admin.TopicInfo, error) {
	var out []admin.TopicInfo
	err := s.read(ctx, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.sqldb.QueryContext(ctx, `SELECT t.topic, s.name FROM (
				SELECT DISTINCT topic FROM conveyor_messages UNION SELECT topic FROM conveyor_subscriptions
			) AS t LEFT JOIN conveyor_subscriptions AS s ON s.topic = t.topic ORDER BY t.topic, s.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			var sub sql.NullString
			if err := rows.Scan(&t, &sub); err != nil {
				return err
			}
			if len(out) == 0 || out[len(out)-1].Name != t {
				out = append(out, admin.TopicInfo{Name: t, Subscriptions: []string{}})
			}
			if sub.Valid {
				last := &out[len(out)-1]
				last.Subscriptions = append(last.Subscriptions, sub.String)
			}
		}
		return rows.Err()
	})
	if out == nil {
		out = []admin.TopicInfo{}
	}
	return out, err
}
