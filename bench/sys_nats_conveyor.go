package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// conveyor natspubsub with its defaults: natspubsub.Connect with
// Options{} but for a Prefix of its own (so that each instance has its own
// streams) and the quiet logger.
type conveyorNATS struct{}

func init() { register(conveyorNATS{}) }

func (conveyorNATS) Name() string   { return "conveyor natspubsub" }
func (conveyorNATS) Kind() Kind     { return KindNATS }
func (conveyorNATS) Baseline() bool { return false }

// FanOutSubs makes it run the fan-out scenario, with pubsub.Subscribe.
func (conveyorNATS) FanOutSubs() int { return fanOutSubs }

func (conveyorNATS) Config(cfg Config) string {
	return fmt.Sprintf("natspubsub.Connect(url, Options{Prefix: fresh per instance}) (defaults otherwise: lease %v, "+
		"RequestTimeout %v; a topic is a file-storage stream with interest retention, a subscription a durable pull "+
		"consumer); enqueue: Topic.Enqueue (one publish, waits for its PubAck); W goroutines Dequeue (one pull request "+
		"for one message each) + Ack (acknowledged by the server); batch: pubsub.EnqueueBatch, pipelined "+
		"(every item published asynchronously, then their PubAcks awaited; not all or none); fan-out: %d subscriptions (pubsub.Subscribe), W/%d goroutines "+
		"Dequeue+Ack each", pubsub.DefaultLease, natspubsub.DefaultRequestTimeout, fanOutSubs, fanOutSubs)
}

type conveyorNATSInstance struct {
	env    *NATSEnv
	prefix string
	ps     *natspubsub.PubSub
	topic  pubsub.Topic
}

func (conveyorNATS) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.NATS == nil {
		return nil, errors.New("no NATS server in this run")
	}
	in := &conveyorNATSInstance{env: env.NATS, prefix: env.NATS.NewPrefix("cv")}
	var err error
	if in.ps, err = natspubsub.Connect(env.NATS.URL, natspubsub.Options{Prefix: in.prefix, Logger: quietLogger()}); err != nil {
		return nil, err
	}
	in.topic = in.ps.Topic(conveyorTopic)
	return in, nil
}

func (in *conveyorNATSInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Enqueue(ctx, payload(m))
}

func (in *conveyorNATSInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	return enqueueBatch(ctx, in.topic, ms)
}

func (in *conveyorNATSInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	return subscribeTopic(ctx, in.ps, conveyorTopic, name)
}

func (in *conveyorNATSInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return consumeTopic(ctx, in.topic, workers, handle, done), nil
}

func (in *conveyorNATSInstance) Close() error {
	return errors.Join(in.ps.Close(), in.env.DeleteStreams(in.prefix))
}
