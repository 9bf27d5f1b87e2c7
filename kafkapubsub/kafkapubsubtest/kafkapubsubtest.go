// Package kafkapubsubtest helps tests run kafkapubsub against a Kafka
// cluster: $KAFKA_BROKERS when set (a real cluster), else an in-process
// kfake cluster of three brokers on free 127.0.0.1 ports, started for the
// test and closed at its end. Each PubSub gets a prefix of its own, whose
// topics and groups (share or consumer) are deleted when its test ends.
//
//	pubsubtest.Run(t, kafkapubsubtest.Harness(t, kafkapubsub.Options{}))
package kafkapubsubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// Brokers returns $KAFKA_BROKERS, or the brokers of a kfake cluster
// started for t and closed when it ends.
func Brokers(t testing.TB) []string {
	if env := os.Getenv("KAFKA_BROKERS"); env != "" {
		return strings.Split(env, ",")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.BrokerConfigs(map[string]string{
		// A new share-group member gets its assignment within a
		// heartbeat: a short one keeps a test's new consumers quick.
		"group.share.heartbeat.interval.ms":   "200",
		"share.record.lock.sweep.interval.ms": "100",
	}))
	if err != nil {
		t.Fatalf("kafkapubsubtest: starting a kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// Prefix returns a new prefix for t's topics on brokers, whose Kafka
// topics and groups are deleted when t ends.
func Prefix(t testing.TB, brokers []string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	prefix := "ct" + hex.EncodeToString(b[:])
	t.Cleanup(func() { cleanup(t, brokers, prefix) })
	return prefix
}

// cleanup deletes the Kafka topics and groups under prefix.
func cleanup(t testing.TB, brokers []string, prefix string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Errorf("kafkapubsubtest: cleaning up %s: %v", prefix, err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Errorf("kafkapubsubtest: listing the topics of %s: %v", prefix, err)
		return
	}
	var mine []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, prefix+".") {
			mine = append(mine, name)
		}
	}
	if len(mine) > 0 {
		if _, err := adm.DeleteTopics(ctx, mine...); err != nil {
			t.Errorf("kafkapubsubtest: deleting the topics of %s: %v", prefix, err)
		}
	}
	var gs []string
	for _, types := range [][]string{{"share"}, nil} { // share groups, then every type
		groups, err := adm.ListGroupsByType(ctx, types)
		if err != nil {
			continue // a cluster without share groups has none of ours
		}
		for _, g := range groups.Groups() {
			if strings.HasPrefix(g, prefix+".") && !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	if len(gs) > 0 {
		_, _ = adm.DeleteGroups(ctx, gs...)
	}
}

// Harness is the conformance suite's harness for kafkapubsub with base's
// options and the suite's retry policy, lease and size limit: each New
// gets a prefix of its own, and Reopen a second PubSub on the same
// topics, as another process would.
func Harness(t testing.TB, base kafkapubsub.Options) pubsubtest.Harness {
	brokers := Brokers(t)
	var prefixes sync.Map // *kafkapubsub.PubSub -> its Options.Prefix
	options := func(prefix string, cfg pubsubtest.Config) kafkapubsub.Options {
		o := base
		o.Brokers, o.Prefix, o.Retry, o.Lease, o.MaxDataSize, o.OnFailure = brokers, prefix, cfg.Retry, cfg.Lease, cfg.MaxDataSize, cfg.OnFailure
		return o
	}
	open := func(t testing.TB, o kafkapubsub.Options) *kafkapubsub.PubSub {
		ps, err := kafkapubsub.New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		prefixes.Store(ps, o.Prefix)
		return ps
	}
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			return open(t, options(Prefix(t, brokers), cfg))
		},
		Reopen: func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			prefix, ok := prefixes.Load(ps)
			if !ok {
				t.Fatal("Reopen of a PubSub not made by New")
			}
			return open(t, options(prefix.(string), cfg))
		},
		Register: func(t testing.TB, ctx context.Context) error {
			o := base
			o.Brokers, o.Prefix = brokers, Prefix(t, brokers)
			return kafkapubsub.RegisterWithOptions(ctx, o)
		},
		Abilities: AbilitiesOf(base),
		Messages:  2000,
	}
}

// AbilitiesOf are what kafkapubsub offers with opts: Abilities, or
// GroupAbilities with Options.ConsumerGroups.
func AbilitiesOf(opts kafkapubsub.Options) pubsubtest.Abilities {
	if opts.ConsumerGroups {
		return GroupAbilities()
	}
	return Abilities()
}

// GroupAbilities are what kafkapubsub offers in consumer-group mode: those
// of share-group mode (Abilities) but Shared. Two processes split a
// subscription's partitions, not its records: one that holds a partition
// holds its records, even while it has no consumer (kafkapubsub's doc);
// the package's own tests check how they share. Its other differences
// (records settled above one in hand are delivered again after a
// rebalance or a restart; Ack returns before the commit) are no ability
// the suite checks; group_test.go pins the first.
func GroupAbilities() pubsubtest.Abilities {
	a := Abilities()
	a.Shared = false
	return a
}

// Abilities are what kafkapubsub offers so far, in share-group mode
// (kafkapubsub's doc).
func Abilities() pubsubtest.Abilities {
	return pubsubtest.Abilities{
		Durable: true, Shared: true, Delay: true, Batch: true,
		DeadLetters: true, DeleteDead: true,
		Attempts: true, ExtendLease: true, FailReasons: true, Reject: true,
		Subscriptions: true, FailureHook: true, Quiesce: true,
		TopicList: true,
		// Not yet: Stats, Inbox. Unique: Kafka cannot refuse a key
		// across producers. Peek, Cancel, Pause, AckCount: not offered.
	}
}
