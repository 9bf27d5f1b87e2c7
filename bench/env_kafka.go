package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaEnv is the Kafka cluster every Kafka system of the run shares:
// $KAFKA_BROKERS when set, else an in-process kfake cluster of three
// brokers on loopback ports, speaking the real protocol, closed with the
// run. Each instance names its topics and groups with a prefix of its own
// (NewPrefix) and deletes them when it closes (Delete).
type KafkaEnv struct {
	Brokers []string
	Prefix  string         // of every topic and group of the run: bench<random>
	Fake    bool           // the cluster is kfake, started by the run
	cluster *kfake.Cluster // nil with $KAFKA_BROKERS
	adm     *kadm.Client
	cl      *kgo.Client
}

// connectKafka connects to $KAFKA_BROKERS, refusing a host that is not a
// loopback address, or starts a kfake cluster.
func connectKafka(ctx context.Context) (*KafkaEnv, error) {
	env := &KafkaEnv{}
	if raw := os.Getenv("KAFKA_BROKERS"); raw != "" {
		for _, b := range strings.Split(raw, ",") {
			b = strings.TrimSpace(b)
			host, _, err := net.SplitHostPort(b)
			if err != nil {
				return nil, fmt.Errorf("KAFKA_BROKERS %q: %v", raw, err)
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return nil, fmt.Errorf("refusing KAFKA_BROKERS %q: the benchmark only talks to a cluster on 127.0.0.1", raw)
			}
			env.Brokers = append(env.Brokers, b)
		}
	} else {
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.BrokerConfigs(map[string]string{
			// as kafkapubsubtest: a new share-group member gets its
			// assignment within a heartbeat
			"group.share.heartbeat.interval.ms":   "200",
			"share.record.lock.sweep.interval.ms": "100",
		}))
		if err != nil {
			return nil, fmt.Errorf("starting a kfake cluster: %w", err)
		}
		env.cluster, env.Brokers, env.Fake = c, c.ListenAddrs(), true
	}
	var err error
	if env.cl, err = kgo.NewClient(kgo.SeedBrokers(env.Brokers...)); err != nil {
		env.Close()
		return nil, err
	}
	env.adm = kadm.NewClient(env.cl)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := env.adm.ListBrokers(pctx); err != nil {
		env.Close()
		return nil, fmt.Errorf("no Kafka cluster answers at %v: %w", env.Brokers, err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	env.Prefix = "bench" + hex.EncodeToString(b[:])
	return env, nil
}

// NewPrefix returns a fresh name prefix for an instance of system:
// bench<run><system><random>, letters and digits, at most 32 characters
// (kafkapubsub's Options.Prefix).
func (k *KafkaEnv) NewPrefix(system string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return k.Prefix + system + hex.EncodeToString(b[:])
}

// Delete deletes the topics and the consumer and share groups whose names
// start with prefix.
func (k *KafkaEnv) Delete(prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := k.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list the topics of %s: %w", prefix, err)
	}
	var mine []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, prefix) {
			mine = append(mine, name)
		}
	}
	if len(mine) > 0 {
		if _, err := k.adm.DeleteTopics(ctx, mine...); err != nil {
			return fmt.Errorf("delete the topics of %s: %w", prefix, err)
		}
	}
	groups, err := k.adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list the groups of %s: %w", prefix, err)
	}
	var gs []string
	for _, g := range groups.Groups() {
		if strings.HasPrefix(g, prefix) {
			gs = append(gs, g)
		}
	}
	if len(gs) > 0 {
		_, _ = k.adm.DeleteGroups(ctx, gs...) // a group with live members refuses; it goes with the cluster
	}
	return nil
}

// settings returns what the report says of the cluster.
func (k *KafkaEnv) settings() map[string]string {
	out := map[string]string{"brokers": strings.Join(k.Brokers, ",")}
	if k.Fake {
		out["cluster"] = "kfake (github.com/twmb/franz-go/pkg/kfake), 3 brokers in the benchmark's process: the real wire protocol, but not a real broker (no disk, no fsync), so the Kafka rows compare the clients' costs"
	} else {
		out["cluster"] = "$KAFKA_BROKERS"
	}
	return out
}

func (k *KafkaEnv) Close() {
	if k.cl != nil {
		k.cl.Close()
	}
	if k.cluster != nil {
		k.cluster.Close()
	}
}
