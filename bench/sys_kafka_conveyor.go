package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// conveyor on Kafka with kafkapubsub's defaults: a topic of one
// partition, its subscriptions share groups; or, groups set, consumer
// groups (Options.ConsumerGroups).
type conveyorKafka struct{ groups bool }

func init() {
	register(conveyorKafka{})
	register(conveyorKafka{groups: true})
}

func (c conveyorKafka) Name() string {
	if c.groups {
		return "conveyor kafkapubsub (consumer groups)"
	}
	return "conveyor kafkapubsub"
}
func (conveyorKafka) Kind() Kind     { return KindKafka }
func (conveyorKafka) Baseline() bool { return false }

func (conveyorKafka) FanOutSubs() int { return fanOutSubs }

func (c conveyorKafka) Config(cfg Config) string {
	mode := "a subscription is a share group"
	if c.groups {
		mode = "ConsumerGroups: true, a subscription is a consumer group whose members hand out records several at a " +
			"time and commit the contiguous settled offsets"
	}
	return fmt.Sprintf("kafkapubsub.New(Options{Brokers, Prefix: fresh per instance}) (defaults otherwise: %d partition "+
		"per topic, lease %v, RequestTimeout %v; %s); enqueue: Topic.Enqueue (one produce, "+
		"waits for the brokers' acknowledgement, acks=all, idempotent); W goroutines Dequeue + Ack; "+
		"batch: pubsub.EnqueueBatch, one Kafka transaction per batch (all or none); fan-out: %d subscriptions (pubsub.Subscribe), W/%d goroutines Dequeue+Ack each",
		kafkapubsub.DefaultPartitions, pubsub.DefaultLease, kafkapubsub.DefaultRequestTimeout, mode, fanOutSubs, fanOutSubs)
}

type conveyorKafkaInstance struct {
	env    *KafkaEnv
	prefix string
	ps     *kafkapubsub.PubSub
	topic  pubsub.Topic
}

func (c conveyorKafka) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.Kafka == nil {
		return nil, errors.New("no Kafka cluster in this run")
	}
	in := &conveyorKafkaInstance{env: env.Kafka, prefix: env.Kafka.NewPrefix("cv")}
	var err error
	if in.ps, err = kafkapubsub.New(kafkapubsub.Options{Brokers: env.Kafka.Brokers, Prefix: in.prefix,
		ConsumerGroups: c.groups, Logger: quietLogger()}); err != nil {
		return nil, err
	}
	in.topic = in.ps.Topic(conveyorTopic)
	return in, nil
}

func (in *conveyorKafkaInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Enqueue(ctx, payload(m))
}

func (in *conveyorKafkaInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	return enqueueBatch(ctx, in.topic, ms)
}

func (in *conveyorKafkaInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	return subscribeTopic(ctx, in.ps, conveyorTopic, name)
}

func (in *conveyorKafkaInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return consumeTopic(ctx, in.topic, workers, handle, done), nil
}

func (in *conveyorKafkaInstance) Close() error {
	return errors.Join(in.ps.Close(), in.env.Delete(in.prefix))
}
