package driver

import (
	"context"

	"github.com/conveyorgo/conveyor/internal/txctx"
)

// TxFrom returns the transaction pubsub.WithTx put in ctx, or nil. The
// engine reads it on every enqueue and hands it on as Outgoing.Tx; a
// driver reads it itself where only ctx reaches it (an Inbox's Claim
// written in the caller's transaction).
func TxFrom(ctx context.Context) any {
	return ctx.Value(txctx.Key{})
}
