package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// watermill-kafka, the Kafka Pub/Sub of Watermill, on Sarama, with its
// default configurations; the consumer group starts at the oldest offset
// (Sarama's default, the newest, would skip what was published before it
// joined).
type watermillKafka struct{}

func init() { register(watermillKafka{}) }

func (watermillKafka) Name() string   { return "watermill-kafka" }
func (watermillKafka) Kind() Kind     { return KindKafka }
func (watermillKafka) Baseline() bool { return false }

func (watermillKafka) FanOutSubs() int { return fanOutSubs }

func (watermillKafka) Config(cfg Config) string {
	return fmt.Sprintf("watermill-kafka v3.0.6 (Sarama), DefaultMarshaler; a topic of 1 partition made with kadm; "+
		"publisher: DefaultSaramaSyncPublisherConfig (a SyncProducer: each Publish waits for the brokers' "+
		"acknowledgement, acks=WaitForLocal, Sarama's default); batch: Publish(msgs...), one SendMessage after "+
		"another; subscriber: DefaultSaramaSubscriberConfig with Consumer.Offsets.Initial = OffsetOldest, a "+
		"consumer group, its output read by one goroutine (it hands over the next message of a partition once the "+
		"last is acked); fan-out: %d Subscribers, a consumer group each", fanOutSubs)
}

type watermillKafkaInstance struct {
	env    *KafkaEnv
	prefix string
	topic  string
	pub    *wkafka.Publisher
	subs   []*wkafka.Subscriber
}

func (watermillKafka) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.Kafka == nil {
		return nil, errors.New("no Kafka cluster in this run")
	}
	in := &watermillKafkaInstance{env: env.Kafka, prefix: env.Kafka.NewPrefix("wm")}
	in.topic = in.prefix + ".msgs"
	if err := createKafkaTopic(ctx, env.Kafka, in.topic); err != nil {
		return nil, err
	}
	var err error
	if in.pub, err = wkafka.NewPublisher(wkafka.PublisherConfig{Brokers: env.Kafka.Brokers, Marshaler: wkafka.DefaultMarshaler{}},
		watermill.NopLogger{}); err != nil {
		return nil, errors.Join(err, env.Kafka.Delete(in.prefix))
	}
	return in, nil
}

func (in *watermillKafkaInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.pub.Publish(in.topic, message.NewMessage(watermill.NewUUID(), payload(m)))
}

func (in *watermillKafkaInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	msgs := make([]*message.Message, len(ms))
	for i, m := range ms {
		msgs[i] = message.NewMessage(watermill.NewUUID(), payload(m))
	}
	return in.pub.Publish(in.topic, msgs...)
}

func (in *watermillKafkaInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return in.consume(ctx, in.prefix+".work", handle, done)
}

func (in *watermillKafkaInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	group := in.prefix + "." + name
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return in.consume(ctx, group, handle, done)
	}, nil
}

// consume subscribes as a member of group and reads its output in one
// goroutine.
func (in *watermillKafkaInstance) consume(ctx context.Context, group string, handle func(Msg), done func()) (func() error, error) {
	sc := wkafka.DefaultSaramaSubscriberConfig()
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sub, err := wkafka.NewSubscriber(wkafka.SubscriberConfig{Brokers: in.env.Brokers, Unmarshaler: wkafka.DefaultMarshaler{},
		OverwriteSaramaConfig: sc, ConsumerGroup: group}, watermill.NopLogger{})
	if err != nil {
		return nil, err
	}
	in.subs = append(in.subs, sub)
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return nil, err
	}
	return startWorkers(ctx, 1, func(ctx context.Context) error {
		for msg := range ch {
			handle(parsePayload(msg.Payload))
			msg.Ack()
			done()
		}
		return nil
	}), nil
}

func (in *watermillKafkaInstance) Close() error {
	var errs []error
	for _, sub := range in.subs {
		errs = append(errs, sub.Close())
	}
	if in.pub != nil {
		errs = append(errs, in.pub.Close())
	}
	errs = append(errs, in.env.Delete(in.prefix))
	return errors.Join(errs...)
}
