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
// (pubsub.Subscribe) too; the destination any topic with
// pubsub.UniqueEnqueuer.
// dbpubsub's default acks (queued, written in groups) suit the source: an
// ack lost with the process only brings back a message whose second
// publish is a duplicate.
//
// # Model
//
// Each of Options.Workers goroutines dequeues a message from the source,
// publishes its data and its header (pubsub.MessageHeader) to the
// destination with pubsub.EnqueueUnique under Key(Options.Source, its
// ID), and acks it in the source once the destination has it, whether
// added or already kept (Stats counts both). A rolled-back enqueue was
// never in the source and never reaches the destination. The source's
// competing consumers let Relays in several processes share one source.
//
// A publish refused for good (pubsub.ErrTooLarge, pubsub.ErrInvalidKey,
// pubsub.ErrInvalidHeader, or what Options.Permanent says) makes the
// message dead in the source at once with its reason (pubsub.Reject),
// listed by pubsub.ListDead and re-queued by pubsub.RequeueDead; the Relay
// goes on. Any other failed publish gives the message back to the source
// with its reason (pubsub.Fail), to come back after the source's retry
// backoff, dead when its attempts run out; the worker pauses (up to 5 s)
// before its next message. A Relay drops no message. A closed source or
// destination stops Run with an error wrapping pubsub.ErrClosed.
//
// # Guarantees
//
// Relaying is at least once: a message is acked in the source only after
// the destination has it, so after a crash or a lost Ack the source hands
// it out again and it is published again under the same key. The
// destination keeps one message per key, which makes the relaying exactly
// once in the destination as long as it remembers the key: on natspubsub,
// the stream's duplicate window (natspubsub.Options.UniqueWindow, 2
// minutes by default; the key goes in Nats-Msg-Id), counted from the first
// publish; on dbpubsub, as long as the message is kept. A publish after
// that adds a second copy. The source brings a message back after its
// lease (30 s by default) or, after a failed publish (which the server may
// have stored all the same), after its retry backoff (1 s, 2 s, 4 s ...):
// keep the window longer than the lease, and than the backoffs of the
// failed publishes in a row worth covering. Consumers that must never see
// a second copy claim each message (pubsub.Claim).
//
// Order: with one worker, the destination gets the messages in the order
// the source hands them out, a retried one later; with several, about so.
package relay
