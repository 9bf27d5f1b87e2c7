package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The baseline of the Kafka systems: what a user would write with
// franz-go and nothing else. A topic of one partition (kafkapubsub's
// default); produce with the client's defaults (acks=all, idempotent),
// waiting for the record's acknowledgement before the call returns, a
// batch produced asynchronously and then awaited whole; a consumer group
// polled by one goroutine, which handles the records of each poll and
// then commits their offsets.
type kafkaBaseline struct{}

func init() { register(kafkaBaseline{}) }

func (kafkaBaseline) Name() string   { return "baseline: kafka franz-go" }
func (kafkaBaseline) Kind() Kind     { return KindKafka }
func (kafkaBaseline) Baseline() bool { return true }

func (kafkaBaseline) FanOutSubs() int { return fanOutSubs }

func (kafkaBaseline) Config(cfg Config) string {
	return fmt.Sprintf("franz-go v1.22.3 kgo: a topic of 1 partition made with kadm; enqueue: Produce with the "+
		"client's defaults (acks=all, idempotent), waiting for the record's promise; batch: Produce of each record, "+
		"then waits for all their promises; a consumer group (reset to the start) polled by one goroutine: PollFetches, "+
		"handle each record, CommitUncommittedOffsets, then each record counts as done; fan-out: %d consumer groups, "+
		"a poller each", fanOutSubs)
}

type kafkaBaselineInstance struct {
	env    *KafkaEnv
	prefix string
	topic  string
	cl     *kgo.Client // the producer
}

func (kafkaBaseline) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.Kafka == nil {
		return nil, errors.New("no Kafka cluster in this run")
	}
	in := &kafkaBaselineInstance{env: env.Kafka, prefix: env.Kafka.NewPrefix("fg")}
	in.topic = in.prefix + ".msgs"
	if err := createKafkaTopic(ctx, env.Kafka, in.topic); err != nil {
		return nil, err
	}
	var err error
	if in.cl, err = kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers...), kgo.DefaultProduceTopic(in.topic)); err != nil {
		return nil, errors.Join(err, env.Kafka.Delete(in.prefix))
	}
	return in, nil
}

// createKafkaTopic makes topic with one partition and the cluster's
// default replication.
func createKafkaTopic(ctx context.Context, env *KafkaEnv, topic string) error {
	resp, err := env.adm.CreateTopic(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func (in *kafkaBaselineInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.cl.ProduceSync(ctx, &kgo.Record{Value: payload(m)}).FirstErr()
}

func (in *kafkaBaselineInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	wg.Add(len(ms))
	for _, m := range ms {
		in.cl.Produce(ctx, &kgo.Record{Value: payload(m)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	return first
}

func (in *kafkaBaselineInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return in.consumeGroup(ctx, in.prefix+".work", handle, done)
}

func (in *kafkaBaselineInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	group := in.prefix + "." + name
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return in.consumeGroup(ctx, group, handle, done)
	}, nil
}

// consumeGroup polls the topic as a member of group, committing after
// each poll's records are handled.
func (in *kafkaBaselineInstance) consumeGroup(ctx context.Context, group string, handle func(Msg), done func()) (func() error, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(in.env.Brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return nil, err
	}
	stop := startWorkers(ctx, 1, func(ctx context.Context) error {
		for {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return err
			}
			if errs := fs.Errors(); len(errs) > 0 {
				return fmt.Errorf("poll %s: %w", errs[0].Topic, errs[0].Err)
			}
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				handle(parsePayload(r.Value))
				n++
			})
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			for range n {
				done()
			}
		}
	})
	return func() error {
		err := stop()
		cl.Close()
		return err
	}, nil
}

func (in *kafkaBaselineInstance) Close() error {
	in.cl.Close()
	return in.env.Delete(in.prefix)
}
