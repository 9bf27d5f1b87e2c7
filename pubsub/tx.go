package pubsub

import (
	"context"

	"github.com/conveyorgo/conveyor/internal/txctx"
)

// WithTx returns a copy of ctx asking every enqueue called with it
// (Enqueue, EnqueueAt, EnqueueBatch, EnqueueUnique, and an
// event.Dispatcher's Dispatch) to run inside tx, a transaction of the
// backend's store: the messages then exist exactly when tx commits, with
// the caller's other writes. It is the one way to enqueue in a caller's
// transaction, and it passes through any wrapper and any layer that hands
// ctx on.
//
// A backend that can write in tx does (dbpubsub, with a bun.Tx; use
// dbpubsub.WithTx for the typed form). A backend that cannot (the
// in-memory channelpubsub, or a tx of another store) returns an error
// wrapping ErrUnsupported and enqueues nothing: an app written for
// PostgreSQL never loses its atomicity on another backend without a word.
// A nil tx asks for nothing.
func WithTx(ctx context.Context, tx any) context.Context {
	return context.WithValue(ctx, txctx.Key{}, tx)
}
