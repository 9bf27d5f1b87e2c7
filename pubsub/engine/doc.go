// Package engine implements pubsub.PubSub, Topic and Message over any
// driver.Store: the delivery semantics written once, every backend only
// its store. A backend's constructor makes its store and hands it to New;
// its users see a pubsub.PubSub and never import this package:
//
//	store := newMemoryStore(...)              // implements driver.Store
//	ps, err := engine.New(store, engine.Options{Name: "channelpubsub"})
//
// The engine owns:
//
//   - the input checks: topic and subscription names, data size, the
//     header (pubsub.WithHeader), unique and inbox keys, and the caller's
//     transaction (pubsub.WithTx), refused with pubsub.ErrUnsupported by a
//     store without driver.Tx;
//   - the handles' lifecycle: a closed handle or PubSub returns
//     pubsub.ErrClosed, and the calls it was waiting in return;
//   - settle-once: a delivery settles once (pubsub.ErrSettled), and not
//     after its lease was lost (pubsub.ErrLeaseExpired), whatever the
//     store;
//   - the retry decision: a failed delivery is retried after the retry
//     policy's backoff, or made dead when its attempts are exhausted, with
//     the reason kept;
//   - the failure hook (Options.OnFailure): every dead message and every
//     failure the store reports, in one place;
//   - the error wording: the backend's name, the operation, the topic,
//     the subscription and the message;
//   - the abilities a handle reports: pubsub.As finds an optional ability
//     on a handle only when its store has it (wrap.Forwarder), through
//     any number of wrappers;
//   - the quiesce gate (admin.Quiescer, gate.go): every handle's
//     Dequeue waits while it is shut, whatever the store;
//   - hook points for instrumentation (Options.Observer): each enqueue
//     with its ctx, before its header is read, and each delivery with
//     its handling context and the outcome of its settles; the handles
//     are then wrap.EnqueueStarter and the messages
//     wrap.ContextCarrier.
//
// What is specific to a store (its grouping of statements, its wake-ups,
// its fetch batching) stays in its driver.
package engine
