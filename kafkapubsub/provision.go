package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Who makes the Kafka topics. By default a PubSub makes each on first use:
// a topic's log and registry at its first use, its delay log with its
// mover, a subscription's own log and dead log when the subscription is
// made (a new generation, names.go). With Options.Bind it makes none: the
// operator runs Provision once per topic (from a process allowed to
// create topics, whatever its Bind), and bound processes, which need no
// CREATE permission, look the topics up.
//
// A subscription needs its own log and dead log from its start, so under
// Bind it cannot be made by the app: Provision makes it, as a reserve
// like the default's (not listed, its group started at the log's end
// then, so it keeps what is published from then on), and the app's
// Subscribe declares it with its retry policy (a registry write, no
// topic). A consumer of the default subscription declares it the same
// way. Provision with no subscription named makes the default's.

// ErrNoTopic is wrapped by the errors of a PubSub with Options.Bind when
// a Kafka topic it needs does not exist: the operator makes it with
// Provision. The error names the conveyor topic (and subscription) and
// the Kafka topic.
var ErrNoTopic = errors.New("kafkapubsub: Kafka topic missing")

// kafkaTopics are the Kafka topics of the topic itself: its log, its
// registry and its delay log.
func (st *topicState) kafkaTopics() []kafkaTopic {
	return []kafkaTopic{st.logTopic(), st.registryTopic(), st.delayTopic()}
}

func (st *topicState) logTopic() kafkaTopic {
	return kafkaTopic{name: st.n.log, what: "log", partitions: st.s.opts.Partitions, configured: true}
}

func (st *topicState) registryTopic() kafkaTopic {
	return kafkaTopic{name: st.n.registry, what: "registry", partitions: 1, compact: true}
}

func (st *topicState) delayTopic() kafkaTopic {
	return kafkaTopic{name: st.n.delayLog(), what: "delay log", partitions: 1}
}

// subTopics are the Kafka topics of generation gen of subscription sub:
// its own log and its dead log.
func (st *topicState) subTopics(sub, gen string) []kafkaTopic {
	n := st.n.sub(sub, gen)
	return []kafkaTopic{
		{name: n.retry, what: "own log", partitions: st.s.opts.Partitions, configured: true},
		{name: n.dead, what: "dead log", partitions: 1},
	}
}

// provisionCall is how the operator provisions sub of topic, for errors.
func provisionCall(topic, sub string) string {
	if sub == pubsub.DefaultSubscription {
		return fmt.Sprintf("PubSub.Provision(ctx, %q)", topic)
	}
	return fmt.Sprintf("PubSub.Provision(ctx, %q, %q)", topic, sub)
}

// subLabel names subscription sub of topic in errors.
func subLabel(topic, sub string) string {
	if sub == pubsub.DefaultSubscription {
		return fmt.Sprintf("the default subscription of topic %q", topic)
	}
	return fmt.Sprintf("subscription %q of topic %q", sub, topic)
}

// notProvisioned is the error of a bound PubSub for what is missing of
// sub of topic.
func notProvisioned(what, topic, sub string) error {
	return fmt.Errorf("%s: %w (Options.Bind: the operator runs %s)", what, ErrNoTopic, provisionCall(topic, sub))
}

// lookUp returns nil when every Kafka topic of want, of what of names,
// exists, else an error wrapping ErrNoTopic naming those missing, which
// Provision of sub of topic makes. A one-partition topic with more is an
// error wrapping ErrInvalidConfig: conveyor reads only its first.
func (s *store) lookUp(ctx context.Context, of, topic, sub string, want []kafkaTopic) error {
	found, err := s.describe(ctx, "looking up the Kafka topics of "+of, nameList(want)...)
	if err != nil {
		return err
	}
	var missing []string
	for _, k := range want {
		d, ok := found[k.name]
		if !ok {
			missing = append(missing, fmt.Sprintf("the %s (Kafka topic %s)", k.what, k.name))
			continue
		}
		if !k.configured {
			if err := k.partitionsOf(of, d, ""); err != nil {
				return err
			}
		}
	}
	if n := len(missing); n > 1 {
		missing = append(missing[:n-2], missing[n-2]+" and "+missing[n-1])
	}
	if len(missing) > 0 {
		return notProvisioned(strings.Join(missing, ", ")+" of "+of, topic, sub)
	}
	return nil
}

// makeTopics creates each Kafka topic of want unless it exists. One that
// existed must have the partition count it asks for and, when
// Options.Replication is set, that replication factor: else the error
// wraps ErrInvalidConfig (an existing topic is not changed). of names
// whose they are, for errors.
func (s *store) makeTopics(ctx context.Context, of string, want []kafkaTopic) error {
	var existed []kafkaTopic
	for _, k := range want {
		ok, err := s.createTopic(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			existed = append(existed, k)
		}
	}
	if len(existed) == 0 {
		return nil
	}
	found, err := s.describe(ctx, "looking up the Kafka topics of "+of, nameList(existed)...)
	if err != nil {
		return err
	}
	for _, k := range existed {
		d, ok := found[k.name]
		if !ok {
			continue // deleted meanwhile: nothing to compare
		}
		option := ""
		if k.configured {
			option = " (Options.Partitions)"
		}
		if err := k.partitionsOf(of, d, option+"; Provision does not change an existing topic"); err != nil {
			return err
		}
		if want := int(s.opts.Replication); want > 0 {
			for _, p := range d.Partitions.Sorted() {
				if len(p.Replicas) != want {
					return fmt.Errorf("%w: the %s of %s, Kafka topic %s, has %d replicas of partition %d, want %d (Options.Replication); Provision does not change an existing topic",
						ErrInvalidConfig, k.what, of, k.name, len(p.Replicas), p.Partition, want)
				}
			}
		}
	}
	return nil
}

// Provision makes every Kafka topic of topic (its log, registry and
// delay log) and each subscription of subscriptions (the default one when
// none is named) with its own log and dead log, with Options.Partitions
// and Options.Replication: the operator's step before processes with
// Options.Bind use the topic. It needs the permission to create topics,
// which those processes then do without; it works whatever this PubSub's
// Bind.
//
// A subscription it makes is a reserve, as the default subscription's is
// before it is declared: not listed by Subscriptions, keeping what is
// published from now on, until a Subscribe (or, for the default, a
// Dequeue) declares it with that PubSub's retry policy. It must be made
// in the mode of the PubSubs that use it (Options.ConsumerGroups).
//
// It is idempotent: what exists is kept (a subscription keeps its
// generation, and gets its Kafka topics back if they were deleted). A
// Kafka topic that exists with another partition count, or another
// replication factor when Options.Replication is set, is an error
// wrapping ErrInvalidConfig, naming it; Provision changes no existing
// topic.
func (ps *PubSub) Provision(ctx context.Context, topic string, subscriptions ...string) error {
	if len(subscriptions) == 0 {
		subscriptions = []string{pubsub.DefaultSubscription}
	}
	for _, sub := range subscriptions {
		if err := pubsub.ValidateSubscription(topic, sub); err != nil {
			return fmt.Errorf("%s: %w", pkg, err)
		}
	}
	s := ps.s
	if s.ctx.Err() != nil {
		return backend.ClosedError(pkg, topic, pubsub.DefaultSubscription)
	}
	st := s.topic(topic)
	of := fmt.Sprintf("topic %q", topic)
	if err := s.makeTopics(ctx, of, st.kafkaTopics()); err != nil {
		return fmt.Errorf("%s: provisioning %s: %w", pkg, of, err)
	}
	if err := st.markReady(ctx); err != nil {
		return fmt.Errorf("%s: provisioning %s: %w", pkg, of, err)
	}
	for _, sub := range subscriptions {
		if _, err := st.subscribe(ctx, sub, nil, true); err != nil {
			return fmt.Errorf("%s: provisioning %s: %w", pkg, backend.Label(topic, sub), err)
		}
	}
	return nil
}

// partitionsOf returns an error wrapping ErrInvalidConfig when d, the
// details of k, of what of names, has another partition count than k
// asks for; note ends its message.
func (k kafkaTopic) partitionsOf(of string, d kadm.TopicDetail, note string) error {
	if len(d.Partitions) == int(k.partitions) {
		return nil
	}
	return fmt.Errorf("%w: the %s of %s, Kafka topic %s, has a partition count of %d, want %d%s",
		ErrInvalidConfig, k.what, of, k.name, len(d.Partitions), k.partitions, note)
}

// nameList returns the names of ks.
func nameList(ks []kafkaTopic) []string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.name
	}
	return names
}
