// Package kafkapubsub is conveyor's backend on Apache Kafka, through
// franz-go: a pubsub.PubSub whose topics are Kafka topics and whose
// subscriptions are share groups (KIP-932, Kafka's queues), shared by
// every process on the same cluster and Options.Prefix. It is the one-line swap
// for the other backends:
//
//	natspubsub.Register(ctx)  ⇄  kafkapubsub.Register(ctx)
//
// # Use
//
//	ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: []string{"127.0.0.1:9092"}})
//	defer ps.Close()
//	orders := ps.Topic("orders")
//	err = orders.Enqueue(ctx, []byte(`{"id":1}`))
//	m, err := orders.Dequeue(ctx)
//	err = m.Ack(ctx)
//
// # Model
//
// A topic is a Kafka topic, its log, and a registry of its
// subscriptions (names.go, subscriptions.go); a subscription is a share
// group reading the log from where it ended when the subscription was
// made, and the subscription's own log; it has a dead log. The default
// subscription follows package pubsub's rules as in natspubsub (a
// reserve keeps a plain queue's messages until it is declared). A
// delivery is a record acquired by a member of the group: Ack accepts
// it; the lease runs by this process's clock and, when it ends, releases
// the record (the cluster's record lock is renewed meanwhile); the
// attempt is the record's delivery count; Nack releases it after the
// retry backoff, holding its lock meanwhile; a message past the
// cluster's delivery limit (Options.DeliveryLimit) is appended again to
// the subscription's own log, keeping its attempts; dead is a copy in
// the dead log with the raw data, header, reason and attempts, listed,
// re-queued and purged through admin.DeadLetters (package
// internal/logstore, shared with natspubsub). Each subscription's copy
// of a message has an ID of its own. A delayed message waits in the
// topic's delay log, read by a mover that keeps what is not due in
// memory and publishes each when due (delay.go).
//
// Other Kafka clients share the log (PubSub.LogTopic names it): a
// message's identity (pubsub.HeaderMessageID, set by package relay) is
// the plain record header "conveyor-message-id", both ways; its other
// header keys are "Conveyor-H-" headers. The relay publishes here with
// plain enqueues; its consumers' inbox (pubsub.Claim on the identity, in
// their database) drops a second copy.
//
// kafkapubsub is a driver of conveyor's engine (package pubsub/engine):
// the engine implements the contract, this package only the Kafka store.
//
// # Guarantees
//
//   - Enqueue returns once the cluster acknowledged the record (acks=all,
//     idempotent producer); every message is delivered at least once, to
//     one consumer at a time; one partition (Options.Partitions) keeps the
//     order of enqueue.
//   - A settle after the lease ran out by this process's clock wraps
//     pubsub.ErrLeaseExpired. Ack returns once the cluster answered it.
//   - A requeue of a dead message is one transaction: of concurrent
//     requeues of one message, one succeeds.
//   - EnqueueAt publishes when due, within a moment, at least once (a
//     mover stopped between a publish and its commit publishes again,
//     with the same message ID).
//   - Not yet (docs/kafkapubsub.md): stats, the inbox, a consumer-group
//     mode for clusters without share groups. Unique enqueue is not
//     offered: Kafka cannot refuse a key across producers. No caller's
//     transaction (pubsub.WithTx is ErrUnsupported).
package kafkapubsub
