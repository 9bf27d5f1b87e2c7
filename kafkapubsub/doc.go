// Package kafkapubsub is conveyor's backend on Apache Kafka, through
// franz-go: a pubsub.PubSub whose topics are Kafka topics and whose
// subscriptions are share groups (KIP-932, Kafka's queues), or consumer
// groups (below), shared by every process on the same cluster and
// Options.Prefix; kafkapubsub.Register(ctx) is the one-line swap:
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
// A topic is a Kafka topic, its log, and a registry of its subscriptions
// (names.go, subscriptions.go); a subscription is a share group reading the
// log from where it ended when the subscription was made, and the
// subscription's own log; it has a dead log. The default subscription
// follows package pubsub's rules as in natspubsub (a reserve keeps a plain
// queue's messages until it is declared). A delivery is a record acquired by
// a member of the group: Ack accepts it; the lease runs by this process's
// clock and, when it ends, releases the record (the cluster's record lock is
// renewed meanwhile); the attempt is the record's delivery count; Nack
// releases it after the retry backoff, holding its lock meanwhile; a message
// past the cluster's delivery limit (Options.DeliveryLimit) is appended
// again to the subscription's own log, keeping its attempts; dead is a copy
// in the dead log with the raw data, header, reason and attempts, listed,
// re-queued and purged through admin.DeadLetters (package internal/logstore,
// shared with natspubsub). Each subscription's copy of a message has an ID
// of its own. A delayed message waits in the topic's delay log, read by a
// mover that keeps what is not due in memory and publishes each when due
// (delay.go). Kafka topics are made on first use or, with Options.Bind, only
// by PubSub.Provision (a missing one is ErrNoTopic).
//
// Other Kafka clients share the log (PubSub.LogTopic): the identity
// (pubsub.HeaderMessageID, which package relay sets) is the plain record
// header "conveyor-message-id"; other header keys are "Conveyor-H-" ones.
// kafkapubsub is a driver of the engine (package pubsub/engine).
//
// # Consumer-group mode
//
// With Options.ConsumerGroups, for clusters without share groups, a
// subscription is a consumer group (group.go): a process's member hands
// the records of its partitions out, several at once, each acked, nacked
// or made dead on its own, and commits per partition only up to the first
// record not settled (inflight.go). A subscription sees each partition's
// records in the partition's order (one partition: the order of enqueue;
// a key's records: their order), except that a message nacked or whose
// lease ran out goes behind, as a copy appended to the subscription's own
// log with its attempts, due time and reason. It differs from share-group
// mode (kafkapubsubtest.GroupAbilities) in these:
//
//   - Processes split a subscription's partitions, not its records: one
//     that holds a partition holds its records, even with no consumer
//     (Shared is off in the conformance harness).
//   - A partition that moves (a process joins, closes or dies) is read
//     again by its next owner from the first record not settled: the
//     records in hand then, and those settled above them, are delivered
//     again, with the attempt they had (at least once).
//   - Ack returns once settled in memory; the commit follows in the
//     background (within a second, and when a partition moves).
//
// # Guarantees
//
//   - Enqueue returns once the cluster acknowledged the record (acks=all,
//     idempotent producer); every message is delivered at least once, to
//     one consumer at a time; one partition (Options.Partitions) keeps the
//     order of enqueue.
//   - A settle after the lease ran out by this process's clock wraps
//     pubsub.ErrLeaseExpired. Nack and dead return once the cluster
//     answered them; Ack once it is queued, sent with the member's next
//     fetch or within a second (with Options.ConfirmAck: once answered).
//   - EnqueueBatch is one Kafka transaction (a pool of transactional
//     producers): the subscriptions, which read committed records only,
//     see all of a batch, in order, or none of it.
//   - A requeue of a dead message is one transaction: of concurrent
//     requeues of one message, one succeeds.
//   - EnqueueAt publishes when due, within a moment, at least once (a
//     mover stopped between a publish and its commit publishes again,
//     with the same message ID).
//   - Not yet (docs/kafkapubsub.md): stats, the inbox. Unique enqueue is
//     not offered: Kafka cannot refuse a key across producers. No caller's
//     transaction (pubsub.WithTx is ErrUnsupported).
package kafkapubsub
