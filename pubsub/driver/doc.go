// Package driver is the contract between conveyor's engine and a backend's
// store, for people who write backends, as database/sql/driver is for
// database drivers. Applications never import it: they use package pubsub,
// whose PubSub, Topic and Message the engine (package pubsub/engine)
// implements over any Store.
//
// A driver is the store operations only. The engine owns what is the same
// on every backend: the input checks (names, sizes, headers, keys, the
// caller's transaction), the open and closed state of handles, settle-once
// (pubsub.ErrSettled), the retry decision (pubsub.RetryPolicy: a failed
// delivery is retried after its backoff or made dead), the error wording,
// the failure hook (pubsub.Failure) and the abilities a topic reports
// (pubsub.As).
//
// A new backend implements three interfaces:
//
//   - Store: Open (told the engine's Env, says which Outgoing fields it
//     honours), Topic, Close.
//   - Topic: Publish one Outgoing message to every subscription of the
//     topic; Subscription, the consumer side of one subscription.
//   - Subscription: Receive one Delivery, leased, with a fencing token the
//     driver keeps in it; Ack, Retry, Dead and Extend, each fenced by that
//     token, returning an error wrapping ErrLeaseLost when the delivery no
//     longer holds its lease.
//
// Everything else is optional: a small interface per capability
// (Subscriptions, TopicLister, BatchPublisher, PipelinePublisher,
// DeadLetters, Stater, Peeker, Canceler, DeadDeleter, Pauser, AckCounter,
// Inbox, and SlotReceiver for speed) that the engine
// finds by type assertion on the Store, Topic or Subscription when it makes
// a handle, and reports through pubsub.As; a capability the driver lacks
// has the fallback its helper (in pubsub or pubsub/admin) documents, or
// pubsub.ErrUnsupported.
//
// docs/writing-a-backend.md walks through the contract with the in-memory
// driver (package channelpubsub) as the example.
//
// # Errors
//
// A driver returns errors without its package's name or the topic's: the
// engine wraps each one with them (for example "channelpubsub: requeue
// "7" on topic "orders": " + the driver's). It wraps the pubsub sentinels
// a caller matches (admin.ErrNotFound, admin.ErrInvalidID,
// pubsub.ErrNoSubscription, ...) and returns ctx's error itself when ctx
// ended.
package driver
