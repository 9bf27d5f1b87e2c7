// Package relay is the outbox relay: it moves the messages of one topic to
// another, typically from dbpubsub, where an app enqueues them in its own
// transaction (pubsub.WithTx), to natspubsub, so that a message reaches
// NATS JetStream exactly when the app's writes committed.
//
// # Use
//
//	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
//	outbox, err := dbpubsub.New(db, dbpubsub.Options{})
//	stream, err := natspubsub.Connect(os.Getenv("NATS_URL"), natspubsub.Options{})
//	r, err := relay.New(outbox.Topic("orders"), stream.Topic("orders"), relay.Options{})
//	err = r.Run(ctx) // until ctx ends
//
// The app writes with
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the app's writes on tx ...
//		return outbox.Topic("orders").Enqueue(dbpubsub.WithTx(ctx, tx), data)
//	})
//
// # Model
//
// Each of Options.Workers goroutines dequeues a message from the source,
// publishes its data to the destination with pubsub.EnqueueUnique under
// Key(Options.Source, its ID), and acks it in the source once the
// destination said it has it, whether it was added or already kept there.
// A rolled-back enqueue was never in the source, so it never reaches the
// destination. The source's competing consumers let any number of Relays,
// in any processes, share one source.
//
// A publish refused for good (pubsub.ErrTooLarge, pubsub.ErrInvalidKey,
// or what Options.Permanent says) makes the message dead in the source at
// once with its reason (pubsub.Reject), listed by pubsub.ListDead and
// re-queued by pubsub.RequeueDead; the Relay goes on. Any other failed
// publish gives the message back to the source with its reason
// (pubsub.Fail): the source retries it after its retry policy's backoff,
// and makes it dead when its attempts run out. A Relay drops no message.
// A closed source or destination stops Run with an error.
//
// # Guarantees
//
// Relaying is at least once: a message is acked in the source only after
// the destination has it, so a crash or a lost Ack makes the source hand
// it out again, and it is published again under the same key. The
// destination keeps one message per key, which makes the relaying exactly
// once in the destination for as long as it remembers the key: on
// natspubsub, the stream's duplicate window (the publish carries the key
// as Nats-Msg-Id); on dbpubsub, until the message is pruned. A second
// publish after that time adds a second copy. The source brings a message
// back after its lease (pubsub.DefaultLease, 30 s) or after a failed
// publish's backoff (1 s, 2 s, 4 s ...): keep the destination's window
// longer than the lease, and than the backoff of the last attempt worth
// deduplicating (a publish that failed may still have been stored).
// Consumers that must never see a second copy claim each message
// (pubsub.Claim).
//
// Order: with one worker, the destination gets messages in the order the
// source hands them out; a retried message comes later. With several, in
// about that order.
package relay
