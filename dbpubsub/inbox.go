package dbpubsub

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Claim records key in the inbox of the handle's subscription (migration
// 0005) and reports whether it is the first claim of key there. In a
// caller's transaction (WithTx) the claim is written in it, and exists
// exactly when it commits: release then does nothing. Otherwise it is
// committed at once, and release deletes it. Claims are pruned after
// Options.Retention, like finished messages: a redelivery later than that
// claims anew.
func (st *topicState) Claim(ctx context.Context, key string) (bool, func(context.Context) error, error) {
	idb, ex, err := txOf(driver.TxFrom(ctx))
	if err != nil {
		return false, nil, err
	}
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	ps := st.ps
	if _, err := ps.qualifiedTable(ctx); err != nil {
		return false, nil, fmt.Errorf("claim %q: %w", key, err)
	}
	if idb == nil {
		ex = ps.sqldb
	}
	var n int64
	err = ps.write(ctx, ex, func(ctx context.Context, ex execer) error {
		res, err := ex.ExecContext(ctx, ps.stmts.claimInbox, st.name, key)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return false, nil, ctxErr(ctx, notMigrated(ps, err, fmt.Sprintf("claim %q", key)))
	}
	release := func(context.Context) error { return nil }
	if idb == nil && n == 1 {
		release = func(ctx context.Context) error {
			err := ps.write(ctx, ps.sqldb, func(ctx context.Context, ex execer) error {
				_, err := ex.ExecContext(ctx, ps.stmts.releaseInbox, st.name, key)
				return err
			})
			if err != nil {
				return ctxErr(ctx, fmt.Errorf("dbpubsub: release claim %q on %s: %w", key, st.label(), err))
			}
			return nil
		}
	}
	return n == 1, release, nil
}
