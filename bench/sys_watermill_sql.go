package main

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// watermill-sql v4: the PostgreSQL schema and offsets adapters over pgx's
// database/sql driver, one consumer group; on the fan-out, one per
// subscription.
type watermillSQL struct{}

func init() { register(watermillSQL{}) }

const (
	watermillTopic        = "bench"
	watermillPollInterval = 10 * time.Millisecond
)

func (watermillSQL) Name() string   { return "watermill-sql" }
func (watermillSQL) Kind() Kind     { return KindPostgres }
func (watermillSQL) Baseline() bool { return false }

// FanOutSubs makes it run the fan-out scenario, with consumer groups.
func (watermillSQL) FanOutSubs() int { return fanOutSubs }

func (watermillSQL) Config(cfg Config) string {
	return fmt.Sprintf("watermill-sql v4.1.2, DefaultPostgreSQLSchema (SubscribeBatchSize 100, JSON payload) + "+
		"DefaultPostgreSQLOffsetsAdapter, pgx stdlib pool of %d conns; PollInterval %v; one subscription of one "+
		"consumer group (its consumers serialize on the offsets row, so W subscriptions would not add throughput); "+
		"batch: Publish(msgs...) = one multi-row INSERT; fan-out: %d consumer groups, a Subscriber and one subscription "+
		"each (not W/%d: a group's consumers serialize on its offsets row)", cfg.PoolSize, watermillPollInterval, fanOutSubs, fanOutSubs)
}

type watermillInstance struct {
	schema   *Schema
	db       *stdsql.DB
	beginner wsql.Beginner
	pub      *wsql.Publisher
	sub      *wsql.Subscriber
	groups   []*wsql.Subscriber // fan-out: one Subscriber per consumer group
}

func (watermillSQL) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	schema, err := env.NewSchema(ctx, "watermill")
	if err != nil {
		return nil, err
	}
	in := &watermillInstance{schema: schema}
	if in.db, err = stdsql.Open("pgx", schema.DSN); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	in.db.SetMaxOpenConns(cfg.PoolSize)
	in.db.SetMaxIdleConns(cfg.PoolSize)
	in.beginner = wsql.BeginnerFromStdSQL(in.db)
	in.pub, err = wsql.NewPublisher(in.beginner, wsql.PublisherConfig{
		SchemaAdapter: wsql.DefaultPostgreSQLSchema{},
	}, watermill.NopLogger{})
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if in.sub, err = in.subscriber("bench"); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if err := in.sub.SubscribeInitialize(watermillTopic); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

// subscriber is a Subscriber of consumer group group.
func (in *watermillInstance) subscriber(group string) (*wsql.Subscriber, error) {
	return wsql.NewSubscriber(in.beginner, wsql.SubscriberConfig{
		ConsumerGroup:    group,
		PollInterval:     watermillPollInterval,
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
	}, watermill.NopLogger{})
}

func (in *watermillInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.pub.Publish(watermillTopic, message.NewMessage(watermill.NewUUID(), payload(m)))
}

func (in *watermillInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	msgs := make([]*message.Message, len(ms))
	for i, m := range ms {
		msgs[i] = message.NewMessage(watermill.NewUUID(), payload(m))
	}
	return in.pub.Publish(watermillTopic, msgs...)
}

func (in *watermillInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return consumeWatermill(ctx, in.sub, handle, done)
}

// Subscribe makes consumer group name: a Subscriber of its own, consumed
// as Consume does the one group. Its offset starts at the topic's first
// message.
func (in *watermillInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	sub, err := in.subscriber(name)
	if err != nil {
		return nil, err
	}
	in.groups = append(in.groups, sub)
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return consumeWatermill(ctx, sub, handle, done)
	}, nil
}

// consumeWatermill reads sub's messages of the topic in one goroutine: the
// subscriber hands over the next message once the last is acked.
func consumeWatermill(ctx context.Context, sub *wsql.Subscriber, handle func(Msg), done func()) (func() error, error) {
	ch, err := sub.Subscribe(ctx, watermillTopic)
	if err != nil {
		return nil, err
	}
	stop := startWorkers(ctx, 1, func(ctx context.Context) error {
		for msg := range ch {
			handle(parsePayload(msg.Payload))
			msg.Ack()
			done()
		}
		return nil
	})
	return stop, nil
}

func (in *watermillInstance) Close() error {
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
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	errs = append(errs, in.schema.Drop())
	return errors.Join(errs...)
}
