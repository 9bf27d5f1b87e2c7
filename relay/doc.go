// Package relay is the outbox relay: it moves the messages of one topic to
// another, typically from dbpubsub, where an app enqueues them in its own
// transaction (pubsub.WithTx), to natspubsub, so that a message reaches
// NATS JetStream if and only if the app's writes committed.
//
// # Use
//
//	outbox, err := dbpubsub.New(db, dbpubsub.Options{})
//	stream, err := natspubsub.Connect(os.Getenv("NATS_URL"), natspubsub.Options{})
//	r, err := relay.New(outbox.Topic("orders"), stream.Topic("orders"), relay.Options{})
//	err = r.Run(ctx) // relays until ctx ends
//
// while the app writes
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the app's writes on tx ...
//		return orders.Enqueue(dbpubsub.WithTx(ctx, tx), data)
//	})
//
// The command relay/cmd/conveyor-relay does the same as a process of its
// own. The source may be any topic handle, a named subscription
// (pubsub.Subscribe) too; the destination any topic.
// dbpubsub's default acks (queued, written in groups) suit the source: an
// ack lost with the process only brings back a message whose second
// publish is a duplicate.
//
// # Model
//
// Each of Options.Workers goroutines dequeues a message from the source,
// publishes its data and its header (pubsub.MessageHeader) to the
// destination with pubsub.EnqueueUnique under Key(Options.Source, its
// identity), and acks it in the source once the destination has it,
// whether added or already kept (Stats counts both). A destination
// without pubsub.UniqueEnqueuer (kafkapubsub: Kafka cannot refuse a key
// across producers) gets a plain Enqueue, and the source's ack waits for
// the broker's (acks=all); a message published again after a crash is a
// second copy with the same identity, which the consumer's inbox drops
// (docs/design/relay.md). A rolled-back enqueue was never in the source
// and never reaches the destination. The source's competing consumers
// let Relays in several processes share one source.
//
// # Identity
//
// A message's identity is pubsub.Identity: its pubsub.HeaderMessageID
// header when it has one, else its ID in the source. The Relay publishes
// every message with that header set to it, so the copy in the
// destination (which gets an ID of its own there: a row's or a stream's
// sequence) carries the identity of the message first enqueued, through
// any chain of relays (A to B to C). A consumer's inbox drops a second
// copy however it arrived with pubsub.ClaimMessage, which claims the
// identity; event.Claim claims the CloudEvents id, which is in the data.
// An app that sets HeaderMessageID itself must give each message its own.
//
// # Failures and guarantees
//
// A publish refused for the message's own sake (pubsub.ErrTooLarge,
// ErrInvalidKey, ErrInvalidHeader, or Options.Permanent) makes it dead in
// the source with its reason (pubsub.Reject); the Relay goes on. Any other
// failed publish means the destination is unavailable and costs the
// message no attempt: the worker keeps it (extending its lease) while the
// whole Relay pauses, Options.Backoff doubling up to Options.MaxBackoff,
// so an outage of any length makes no committed message dead. Each failure
// reaches Options.OnFailure (pubsub.Failure).
//
// Relaying is at least once, and exactly once in the destination while it
// remembers the key (natspubsub: its duplicate window; dbpubsub: while the
// message is kept; kafkapubsub: never, see Relay.Unique). Consumers that
// must never see a second copy claim its identity (pubsub.ClaimMessage,
// or pubsub.Claim on an inbox in their database). With one worker the
// destination gets the source's order. docs/design/relay.md has the
// details.
package relay
