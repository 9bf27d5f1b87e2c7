// Package logstore is what conveyor's backends on a log store share: the
// stores that keep a topic as an append-only log read by named groups
// (NATS JetStream streams and their durable consumers, Kafka topics and
// their share groups), which lack what a queue has: delayed delivery,
// dead letters, a retry kept per subscription. The emulations are written
// here once, on the few primitives every log store has; a driver
// (natspubsub, kafkapubsub) supplies the primitives.
//
// # Model
//
// A log record has data and headers (string keys and values). conveyor
// keeps its own facts about a message in headers of its own (Header*), and
// a message's pubsub.Header under prefixed keys (UserKey, FromWire), so
// that no key of the caller's is read as conveyor's.
//
//   - Delayed delivery: a delayed message is appended to the topic's delay
//     log with its due time (HeaderDue) and enqueue time (HeaderEnqueued).
//     A mover (RunMover, Move) consumes the delay log as one group: a
//     record not due is given back for the time it still waits
//     (Delayed.Later); a due one is published to the topic and then
//     settled, so a mover stopped between the two publishes it again (the
//     store de-duplicates by the record's ID where it can).
//   - Dead letters: each subscription has a dead log; a dead record keeps
//     the raw data, the header, the message ID, its attempts and the
//     reason (DeadFields, ParseDead). DeadLetters lists, re-queues,
//     deletes and purges them over a DeadLog, the store's primitives:
//     scan in order, look up, remove one, purge a prefix, and append a
//     record to the subscription's own log.
//   - Subscriptions: a group gets only what is appended after it was
//     made, so a publish to a topic without subscriptions makes the
//     default one in reserve, which a consumer of the default declares
//     later. A Subscription, kept by the store as JSON, carries these
//     rules (Declare, NoteUntil, Skips, Names) over the store's Position.
//
// docs/design/logstore.md says what is shared and what each store
// supplies.
//
// # Example
//
//	dl := logstore.DeadLetters{Log: myDeadLog{sub}, ValidID: validID}
//	dead, err := dl.ListDead(ctx, 10)
package logstore
