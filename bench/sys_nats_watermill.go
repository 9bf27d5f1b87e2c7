package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	wnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
)

// watermill-nats v2's pkg/nats in JetStream mode (its primary
// implementation): with its defaults, and with the configuration of
// ThreeDotsLabs/watermill-benchmark's "nats-jetstream" pub/sub run with
// WATERMILL_NATS_ACK_ASYNC=true (the "async ack" column of its README): a
// queue group and as many subscribers as workers (it uses NumCPU ×
// SUBSCRIBER_CPU_MULTIPLIER; W here, as every system gets W), acks not
// waiting for the server.
type watermillNATS struct {
	tuned bool // the watermill-benchmark configuration
}

func init() {
	register(watermillNATS{})
	register(watermillNATS{tuned: true})
}

func (w watermillNATS) Name() string {
	if w.tuned {
		return "watermill-nats (watermill-benchmark)"
	}
	return "watermill-nats (defaults)"
}

func (watermillNATS) Kind() Kind     { return KindNATS }
func (watermillNATS) Baseline() bool { return false }

// FanOutSubs makes it run the fan-out scenario: a Subscriber per
// subscription (with the defaults, each Subscribe makes a consumer of its
// own; tuned, each has a queue group of its own).
func (watermillNATS) FanOutSubs() int { return fanOutSubs }

func (w watermillNATS) Config(cfg Config) string {
	common := "watermill-nats v2.1.3 pkg/nats (JetStream mode, legacy nats.go JetStream API), NATSMarshaler; the stream " +
		"made once by SubscribeInitialize (AutoProvision false, as its tests do: name and subject = the topic, " +
		"limits retention, file storage); enqueue: Publish (waits for the PubAck); batch: Publish(msgs...), one " +
		"publish after another, each waiting for its PubAck; "
	if w.tuned {
		return common + fmt.Sprintf("as watermill-benchmark's nats-jetstream with WATERMILL_NATS_ACK_ASYNC=true: "+
			"JetStreamConfig{AckAsync: true}, QueueGroupPrefix \"benchmark\" (a durable push consumer named after the "+
			"queue group), SubscribersCount W (watermill-benchmark: NumCPU × SUBSCRIBER_CPU_MULTIPLIER), their output "+
			"read by W goroutines; fan-out: %d Subscribers with queue groups of their own, SubscribersCount W/%d each",
			fanOutSubs, fanOutSubs)
	}
	return common + fmt.Sprintf("SubscriberConfig{} and JetStreamConfig{} otherwise (defaults: SubscribersCount 1, "+
		"no queue group, so each Subscribe is an ephemeral push consumer; AckSync: each ack waits for the server; "+
		"one message in flight per subscriber), its output read by one goroutine (a subscriber hands over the next "+
		"message once the last is acked); fan-out: %d Subscribe calls, a consumer each", fanOutSubs)
}

type watermillNATSInstance struct {
	w      watermillNATS
	env    *NATSEnv
	topic  string // also the stream's name and subject
	pub    *wnats.Publisher
	sub    *wnats.Subscriber
	groups []*wnats.Subscriber // fan-out: one Subscriber per subscription
	subs   int                 // W, or W/fanOutSubs on the fan-out
}

func (w watermillNATS) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.NATS == nil {
		return nil, errors.New("no NATS server in this run")
	}
	in := &watermillNATSInstance{w: w, env: env.NATS, topic: env.NATS.NewPrefix("wm"), subs: cfg.W}
	js := wnats.JetStreamConfig{AckAsync: w.tuned}
	var err error
	if in.pub, err = wnats.NewPublisher(wnats.PublisherConfig{URL: env.NATS.URL, Marshaler: &wnats.NATSMarshaler{}, JetStream: js},
		watermill.NopLogger{}); err != nil {
		return nil, err
	}
	if in.sub, err = in.subscriber("benchmark", cfg.W); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if err := in.sub.SubscribeInitialize(in.topic); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

// subscriber is a Subscriber with the system's configuration; tuned, of
// queue group group with n subscribers.
func (in *watermillNATSInstance) subscriber(group string, n int) (*wnats.Subscriber, error) {
	c := wnats.SubscriberConfig{URL: in.env.URL, Unmarshaler: &wnats.NATSMarshaler{}}
	if in.w.tuned {
		c.QueueGroupPrefix = group
		c.SubscribersCount = max(1, n)
		c.JetStream = wnats.JetStreamConfig{AckAsync: true}
	}
	return wnats.NewSubscriber(c, watermill.NopLogger{})
}

func (in *watermillNATSInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.pub.Publish(in.topic, message.NewMessage(watermill.NewUUID(), payload(m)))
}

func (in *watermillNATSInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	msgs := make([]*message.Message, len(ms))
	for i, m := range ms {
		msgs[i] = message.NewMessage(watermill.NewUUID(), payload(m))
	}
	return in.pub.Publish(in.topic, msgs...)
}

func (in *watermillNATSInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return in.consume(ctx, in.sub, workers, handle, done)
}

func (in *watermillNATSInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	sub, err := in.subscriber(name, in.subs/fanOutSubs)
	if err != nil {
		return nil, err
	}
	in.groups = append(in.groups, sub)
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return in.consume(ctx, sub, workers, handle, done)
	}, nil
}

// consume reads sub's output channel: from one goroutine with the defaults
// (one message in flight), from workers goroutines tuned.
func (in *watermillNATSInstance) consume(ctx context.Context, sub *wnats.Subscriber, workers int, handle func(Msg), done func()) (func() error, error) {
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return nil, err
	}
	if !in.w.tuned {
		workers = 1
	}
	return startWorkers(ctx, workers, func(ctx context.Context) error {
		for msg := range ch {
			handle(parsePayload(msg.Payload))
			msg.Ack()
			done()
		}
		return nil
	}), nil
}

func (in *watermillNATSInstance) Close() error {
	var errs []error
	for _, sub := range in.groups {
		errs = append(errs, sub.Close())
	}
	if in.sub != nil {
		errs = append(errs, in.sub.Close())
	}
	if in.pub != nil {
		errs = append(errs, in.pub.Close())
	}
	errs = append(errs, in.env.DeleteStreams(in.topic))
	return errors.Join(errs...)
}
