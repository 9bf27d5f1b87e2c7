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
// A topic is a Kafka topic, its log, with a registry of its subscriptions;
// a subscription is a share group reading the log (from where it ended
// when the subscription was made) and the subscription's own log, with a
// dead log. A delivery is a record acquired by a member of the group: Ack
// accepts it, the lease releases it when it runs out, the attempt is its
// delivery count, Nack releases it after the backoff; dead is a copy in the
// dead log, listed, re-queued and purged through admin.DeadLetters. A
// delayed message waits in the topic's delay log until a mover publishes
// it. Other Kafka clients share the log (PubSub.LogTopic); a message's
// identity is the record header "conveyor-message-id". docs/kafkapubsub.md
// has the whole mapping, and who makes the Kafka topics (Options.Bind,
// PubSub.Provision).
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
