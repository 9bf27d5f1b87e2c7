// Package channelpubsub is conveyor's in-process backend, and the default:
// one buffered Go channel per topic.
//
//	ps := channelpubsub.New()
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	_ = orders.Enqueue(ctx, []byte("order 1"))
//	msg, _ := orders.Dequeue(ctx)
//	_ = msg.Ack(ctx)
//
// or, in an app wired with package di, channelpubsub.Register(ctx).
//
// It keeps the whole pubsub contract (checked by pubsubtest): leases,
// retries with the shared backoff, attempt counts, dead letters, delays,
// batches and stats. Enqueue on a full topic (Options.Capacity ready
// messages, default 10) blocks until there is room or ctx ends: producers
// feel backpressure, nothing is dropped. Enqueue copies the data.
//
// Messages live in the process's memory: they are lost when the process
// ends, and shared only by the goroutines of one process. For messages that
// survive restarts and are shared by every process on a database, use
// package dbpubsub: swapping is one line.
//
// Close stops the PubSub: its timers are stopped and its goroutines have
// ended when Close returns.
package channelpubsub
