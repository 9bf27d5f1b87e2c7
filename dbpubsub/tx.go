package dbpubsub

import (
	"context"

	"github.com/uptrace/bun"
)

type txKey struct{}

// WithTx returns a copy of ctx that makes every enqueue of a dbpubsub topic
// called with it (Enqueue, EnqueueAt, EnqueueBatch, EnqueueUnique) run
// inside idb, the caller's bun.Tx (or *bun.DB, bun.Conn): the messages
// exist exactly when the caller's writes commit. It lets code that knows
// only a pubsub.Topic or an event.Dispatcher write in the caller's
// transaction:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		if _, err := tx.NewInsert().Model(&order).Exec(ctx); err != nil {
//			return err
//		}
//		return events.Dispatch(dbpubsub.WithTx(ctx, tx), OrderPlaced{ID: order.ID})
//	})
//
// Consumers are notified when the transaction commits. Other backends
// ignore the transaction in ctx.
func WithTx(ctx context.Context, idb bun.IDB) context.Context {
	return context.WithValue(ctx, txKey{}, idb)
}

// txFrom returns the bun.IDB WithTx put in ctx, or nil.
func txFrom(ctx context.Context) bun.IDB {
	idb, _ := ctx.Value(txKey{}).(bun.IDB)
	return idb
}
