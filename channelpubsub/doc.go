// Package channelpubsub is conveyor's in-process backend, and the default:
// one buffered Go channel per subscription of a topic.
//
//	ps := channelpubsub.New()
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	_ = orders.Enqueue(ctx, []byte("order 1"))
//	msg, _ := orders.Dequeue(ctx)
//	_ = msg.Ack(ctx)
//
//	billing, _ := pubsub.Subscribe(ctx, ps, "orders", "billing") // a copy of every later message
//
// or, in an app wired with package di, channelpubsub.Register(ctx).
//
// It keeps the whole pubsub contract (checked by pubsubtest): leases,
// retries with the shared backoff, attempt counts, dead letters, delays,
// batches, stats, subscriptions and an inbox. Enqueue on a full
// subscription (Options.Capacity ready messages, default 10) blocks until
// there is room or ctx ends: producers feel backpressure, nothing is
// dropped. Enqueue copies the data; the header its ctx asks for
// (pubsub.WithHeader) is kept with the message, one for all its copies, and
// every delivery carries it (pubsub.MessageHeader).
//
// Subscriptions follow package pubsub's rules. A publish to several
// subscriptions goes to all or none of them, and a full one holds the
// topic's publishers back. A unique enqueue gives a copy to each
// subscription that keeps no message with the key, and reports whether
// one did. DeleteSubscription drops the subscription's copies at once;
// its deliveries in hand then fail to settle with pubsub.ErrLeaseExpired,
// and its handles return pubsub.ErrNoSubscription until it is created
// again. The inbox (Claim) takes part in no transaction: a claim is
// recorded at once, even with pubsub.WithTx, and release forgets it. A
// pause (admin.Pause) holds a subscription's Dequeue calls in memory
// until Resume, and goes with the subscription when it is deleted.
//
// Messages live in the process's memory: they are lost when the process
// ends, and shared only by the goroutines of one process. For messages that
// survive restarts and are shared by every process on a database, use
// package dbpubsub: swapping is one line.
//
// Close stops the PubSub: its timers are stopped and its goroutines have
// ended when Close returns.
//
// channelpubsub is a driver of conveyor's engine (package pubsub/engine):
// the engine implements the contract, this package only the in-memory
// store (docs/writing-a-backend.md walks through it).
//
// # Failures
//
// Options.OnFailure hears of each message that goes dead (pubsub.Failure,
// with its cause: attempts exhausted, rejected, lease ran out), in a
// goroutine of its own that never holds up a delivery (see
// pubsub.Failure).
package channelpubsub
