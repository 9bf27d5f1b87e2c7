// Package txctx holds the context key under which pubsub.WithTx keeps the
// transaction an enqueue's ctx asks to run in, read by driver.TxFrom.
package txctx

// Key is the context key of the transaction (any: a store's own type)
// that the enqueues called with the context run in.
type Key struct{}
