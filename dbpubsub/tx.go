package dbpubsub

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
)

// WithTx returns a copy of ctx that makes every enqueue called with it
// (Enqueue, EnqueueAt, EnqueueBatch, EnqueueUnique, an event.Dispatcher's
// Dispatch) run inside idb, the caller's bun.Tx (or *bun.DB, bun.Conn):
// the messages exist exactly when the caller's writes commit, and
// consumers are notified then. It is pubsub.WithTx with a bun.IDB; code
// that knows only a pubsub.Topic, a wrapper of one, or an event.Dispatcher
// writes in the caller's transaction through it:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		if _, err := tx.NewInsert().Model(&order).Exec(ctx); err != nil {
//			return err
//		}
//		return events.Dispatch(dbpubsub.WithTx(ctx, tx), OrderPlaced{ID: order.ID})
//	})
//
// A backend that cannot write in idb (channelpubsub) refuses the enqueue
// with an error wrapping pubsub.ErrUnsupported.
func WithTx(ctx context.Context, idb bun.IDB) context.Context {
	return pubsub.WithTx(ctx, idb)
}

// txOf returns the caller's transaction v (pubsub.WithTx), nil for none,
// as the bun.IDB and the database/sql handle under it, or nils. A
// transaction this package cannot write in is an error wrapping
// pubsub.ErrUnsupported.
func txOf(v any) (bun.IDB, execer, error) {
	if v == nil {
		return nil, nil, nil
	}
	idb, ok := v.(bun.IDB)
	if ok {
		switch t := idb.(type) {
		case *bun.DB:
			return idb, t.DB, nil
		case bun.Tx:
			return idb, t.Tx, nil
		case *bun.Tx:
			return idb, t.Tx, nil
		case bun.Conn:
			return idb, t.Conn, nil
		case *bun.Conn:
			return idb, t.Conn, nil
		}
	}
	return nil, nil, fmt.Errorf("cannot enqueue in a transaction of type %T, want a bun.Tx, *bun.DB or bun.Conn: %w", v, pubsub.ErrUnsupported)
}
