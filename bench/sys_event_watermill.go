package main

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// Watermill's cqrs component as its documentation wires it: a
// cqrs.EventBus publishing with the JSONMarshaler, and a
// cqrs.EventGroupProcessor (one subscription, events routed by name to the
// group's handlers, as conveyor's Service does by type) on a
// message.Router, with one handler. On GoChannel, or on watermill-sql with
// the adapters of sys_watermill_sql.go.
type watermillCQRS struct {
	eventSystem
	sql bool // watermill-sql, else GoChannel
}

func init() {
	register(watermillCQRS{})
	register(watermillCQRS{sql: true})
}

func (w watermillCQRS) Name() string {
	if w.sql {
		return "watermill cqrs (watermill-sql)"
	}
	return "watermill cqrs (gochannel)"
}

func (w watermillCQRS) Kind() Kind {
	if w.sql {
		return KindPostgres
	}
	return KindMemory
}

func (watermillCQRS) Baseline() bool { return false }

func (w watermillCQRS) Config(cfg Config) string {
	common := "cqrs.EventBus + EventGroupProcessor, JSONMarshaler{} (defaults: UUID v4 ids, fully qualified struct " +
		"name), message.RouterConfig{} (it handles each message in a goroutine of its own: no worker count); " +
		"W goroutines Publish"
	if w.sql {
		return fmt.Sprintf("watermill v1.5.1 %s; watermill-sql v4.1.2 publisher and one subscriber as in watermill-sql's row "+
			"(DefaultPostgreSQLSchema, DefaultPostgreSQLOffsetsAdapter, PollInterval %v, pgx stdlib pool of %d conns): "+
			"it delivers the next message once the last is acked", common, watermillPollInterval, cfg.PoolSize)
	}
	return fmt.Sprintf("watermill v1.5.1 %s; gochannel.Config{} (defaults, as in watermill gochannel's row: publish "+
		"does not wait for acks, a goroutine per message and subscriber)", common)
}

type watermillCQRSInstance struct {
	pub message.Publisher
	sub message.Subscriber
	bus *cqrs.EventBus
	gc  *gochannel.GoChannel // GoChannel only: pub and sub
	// watermill-sql only
	schema *Schema
	db     *stdsql.DB
}

// cqrsMarshaler is the marshaler of both sides: the defaults.
var cqrsMarshaler = cqrs.JSONMarshaler{}

func (w watermillCQRS) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	in := &watermillCQRSInstance{}
	if w.sql {
		if err := in.openSQL(ctx, env, cfg); err != nil {
			return nil, errors.Join(err, in.Close())
		}
	} else {
		in.gc = gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
		in.pub, in.sub = in.gc, in.gc
	}
	var err error
	in.bus, err = cqrs.NewEventBusWithConfig(in.pub, cqrs.EventBusConfig{
		GeneratePublishTopic: func(cqrs.GenerateEventPublishTopicParams) (string, error) { return eventsTopic, nil },
		Marshaler:            cqrsMarshaler,
		Logger:               watermill.NopLogger{},
	})
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

// openSQL makes the watermill-sql publisher and subscriber the way
// watermillSQL.Open does, in a schema of their own.
func (in *watermillCQRSInstance) openSQL(ctx context.Context, env *Env, cfg Config) error {
	var err error
	if in.schema, err = env.NewSchema(ctx, "watermill_cqrs"); err != nil {
		return err
	}
	if in.db, err = stdsql.Open("pgx", in.schema.DSN); err != nil {
		return err
	}
	in.db.SetMaxOpenConns(cfg.PoolSize)
	in.db.SetMaxIdleConns(cfg.PoolSize)
	beginner := wsql.BeginnerFromStdSQL(in.db)
	logger := watermill.NopLogger{}
	pub, err := wsql.NewPublisher(beginner, wsql.PublisherConfig{SchemaAdapter: wsql.DefaultPostgreSQLSchema{}}, logger)
	if err != nil {
		return err
	}
	in.pub = pub
	sub, err := wsql.NewSubscriber(beginner, wsql.SubscriberConfig{
		ConsumerGroup:    "bench",
		PollInterval:     watermillPollInterval,
		SchemaAdapter:    wsql.DefaultPostgreSQLSchema{},
		OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
		InitializeSchema: true,
	}, logger)
	if err != nil {
		return err
	}
	in.sub = sub
	return sub.SubscribeInitialize(eventsTopic)
}

func (in *watermillCQRSInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.bus.Publish(ctx, newOrder(m))
}

// Consume runs a router with the event processor; workers is not used: the
// router has no such setting (see Config).
func (in *watermillCQRSInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		return nil, err
	}
	proc, err := cqrs.NewEventGroupProcessorWithConfig(router, cqrs.EventGroupProcessorConfig{
		GenerateSubscribeTopic: func(cqrs.EventGroupProcessorGenerateSubscribeTopicParams) (string, error) {
			return eventsTopic, nil
		},
		SubscriberConstructor: func(cqrs.EventGroupProcessorSubscriberConstructorParams) (message.Subscriber, error) {
			return in.sub, nil
		},
		Marshaler: cqrsMarshaler,
		Logger:    watermill.NopLogger{},
	})
	if err != nil {
		return nil, err
	}
	err = proc.AddHandlersGroup("bench", cqrs.NewGroupEventHandler(func(_ context.Context, o *Order) error {
		handle(o.msg())
		done()
		return nil
	}))
	if err != nil {
		return nil, err
	}
	ran := make(chan error, 1)
	go func() { ran <- router.Run(ctx) }()
	select {
	case <-router.Running():
	case err := <-ran:
		return nil, fmt.Errorf("watermill router stopped before running: %v", err)
	}
	return func() error {
		return errors.Join(router.Close(), <-ran)
	}, nil
}

func (in *watermillCQRSInstance) Close() error {
	var errs []error
	switch {
	case in.gc != nil:
		errs = append(errs, in.gc.Close())
	default:
		if in.sub != nil {
			errs = append(errs, in.sub.Close())
		}
		if in.pub != nil {
			errs = append(errs, in.pub.Close())
		}
	}
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	if in.schema != nil {
		errs = append(errs, in.schema.Drop())
	}
	return errors.Join(errs...)
}
