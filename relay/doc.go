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
// identity), and acks it in the source once the destination has it,
// whether added or already kept (Stats counts both). A rolled-back
// enqueue was never in the source and never reaches the destination. The
// source's competing consumers let Relays in several processes share one
// source.
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
// # Failures
//
// A publish refused for the message's own sake (pubsub.ErrTooLarge,
// pubsub.ErrInvalidKey, pubsub.ErrInvalidHeader, or what
// Options.Permanent says) makes the message dead in the source at once
// with its reason (pubsub.Reject), listed by pubsub.ListDead and
// re-queued by pubsub.RequeueDead; the Relay goes on.
//
// Any other failed publish means the destination is unavailable (down,
// unreachable, slow, busy), and does not count as the message's attempt:
// the worker keeps the message, extends its lease in the source
// (pubsub.ExtendLease) over the pause, and publishes it again. The Relay
// pauses as a whole: every worker waits before its next publish,
// Options.Backoff after the first failure, twice as long after each
// failure in a row, up to Options.MaxBackoff; the first publish that
// succeeds ends the pause. So an outage of any length makes no committed
// message dead: they wait in the source, ready or in hand, and go once
// the destination is back. A source that cannot extend a lease
// (pubsub.ErrUnsupported) gets the message back with its reason
// (pubsub.Fail), an attempt counted; so does one whose Relay stops during
// the pause. Each failure is reported (Options.OnFailure,
// pubsub.Failure): a failed publish as pubsub.PublishFailed, a rejected
// message as pubsub.Dead, a failed Dequeue as pubsub.FetchRetried. A
// Relay drops no message. A closed source or destination stops Run with
// an error wrapping pubsub.ErrClosed.
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
// lease (30 s by default) when a Relay stopped holding it: keep the window
// longer than the lease. A failed publish (which the server may have
// stored all the same) is tried again by the same worker after the pause,
// within the window unless the outage outlasts it. Consumers that must
// never see a second copy claim each message's identity
// (pubsub.ClaimMessage), which a second copy shares.
//
// Order: with one worker, the destination gets the messages in the order
// the source hands them out, a retried one later; with several, about so.
package relay
