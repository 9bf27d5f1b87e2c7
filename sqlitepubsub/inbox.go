package sqlitepubsub

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Inbox = (*subscription)(nil)

// claimKey records a key in a subscription's inbox unless it is there.
const claimKey = `INSERT INTO conveyor_inbox (topic, sub, key, claimed_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`

// Claim records key in the subscription's inbox and reports whether it is
// the first claim of it there. In the caller's transaction on the file
// (pubsub.WithTx) the claim is written in it, and release does nothing;
// otherwise it is written at once, and release deletes it while it is
// this claim's. Claims are pruned after Options.Retention.
func (u *subscription) Claim(ctx context.Context, key string) (bool, func(context.Context) error, error) {
	t := now()
	var n int64
	if v := driver.TxFrom(ctx); v != nil {
		tx, err := u.s.txOf(ctx, v)
		if err != nil {
			return false, nil, err
		}
		res, err := tx.ExecContext(ctx, claimKey, u.topic, u.name, key, t)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return n > 0, noRelease, classify(ctx, err)
	}
	err := u.s.write(ctx, func(ctx context.Context) error {
		res, err := u.s.sqldb.ExecContext(ctx, claimKey, u.topic, u.name, key, t)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil || n == 0 {
		return false, noRelease, err
	}
	return true, func(ctx context.Context) error {
		return u.s.write(ctx, func(ctx context.Context) error {
			_, err := u.s.sqldb.ExecContext(ctx, `DELETE FROM conveyor_inbox WHERE topic = ? AND sub = ? AND key = ? AND claimed_at = ?`,
				u.topic, u.name, key, t)
			return err
		})
	}, nil
}

func noRelease(context.Context) error { return nil }
