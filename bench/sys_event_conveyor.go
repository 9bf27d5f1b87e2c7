package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/migrations"
)

// conveyor's event package wired as an app wires it: an injector with a
// backend registered and event.Register called, a Dispatcher resolved by
// topic name, and an event.Service of W workers with one ListenFunc.
type conveyorEvent struct {
	eventSystem
	db bool // dbpubsub, else channelpubsub
}

func init() {
	register(conveyorEvent{})
	register(conveyorEvent{db: true})
}

func (c conveyorEvent) Name() string {
	switch {
	case c.db:
		return "conveyor event (dbpubsub)"
	}
	return "conveyor event (channelpubsub)"
}

func (c conveyorEvent) Kind() Kind {
	if c.db {
		return KindPostgres
	}
	return KindMemory
}

func (conveyorEvent) Baseline() bool { return false }

func (c conveyorEvent) Config(cfg Config) string {
	backend := fmt.Sprintf("channelpubsub.Register (defaults: Capacity %d)", channelpubsub.DefaultCapacity)
	if c.db {
		backend = fmt.Sprintf("dbpubsub.Register (defaults: ClaimBatch %d, Prefetch %d, PollInterval %v + LISTEN/NOTIFY) "+
			"on dbpubsub.Open's pool of %d conns", dbpubsub.DefaultClaimBatch, dbpubsub.DefaultPrefetch,
			dbpubsub.DefaultPollInterval, conveyorPool())
	}
	return fmt.Sprintf("%s + event.Register; W goroutines Dispatch on the injected event.Dispatcher (CloudEvents JSON); "+
		"event.NewService(ServiceOptions{Workers: W}, defaults otherwise: Logging and Recover middleware; Logger at error level) with one ListenFunc",
		backend)
}

type conveyorEventInstance struct {
	ctx    context.Context // carries the injector
	schema *Schema         // dbpubsub only
	d      event.Dispatcher
}

func (c conveyorEvent) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	in := &conveyorEventInstance{ctx: di.NewContext(context.Background())}
	if c.db {
		var err error
		if in.schema, err = env.NewSchema(ctx, "conveyor_event"); err != nil {
			return nil, err
		}
		if err := in.registerDB(ctx); err != nil {
			return nil, errors.Join(err, in.Close())
		}
	} else if err := channelpubsub.Register(in.ctx); err != nil {
		return nil, err
	}
	if err := event.Register(in.ctx); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	var err error
	if in.d, err = di.ResolveNamed[event.Dispatcher](in.ctx, eventsTopic); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

// registerDB migrates the schema and registers its *bun.DB and dbpubsub
// (which di.Shutdown closes, the PubSub first).
func (in *conveyorEventInstance) registerDB(ctx context.Context) error {
	db, err := dbpubsub.Open(in.schema.DSN)
	if err != nil {
		return err
	}
	if err := di.RegisterSingleton[*bun.DB](in.ctx, db); err != nil {
		return errors.Join(err, db.Close())
	}
	if err := migrations.Migrate(ctx, db); err != nil {
		return err
	}
	return dbpubsub.RegisterWithOptions(in.ctx, dbpubsub.Options{Logger: quietLogger()})
}

func (in *conveyorEventInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.d.Dispatch(ctx, newOrder(m))
}

func (in *conveyorEventInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	svc, err := event.NewService(eventsTopic, event.ServiceOptions{Workers: workers, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	if err := event.ListenFunc(svc, func(_ context.Context, o Order) error {
		handle(o.msg())
		done()
		return nil
	}); err != nil {
		return nil, err
	}
	if err := svc.Start(in.ctx); err != nil {
		return nil, err
	}
	return func() error { return svc.Shutdown(context.Background()) }, nil
}

// Close shuts the injector down (the Service, the PubSub, the *bun.DB) and
// drops the schema.
func (in *conveyorEventInstance) Close() error {
	err := di.Shutdown(in.ctx)
	if in.schema != nil {
		err = errors.Join(err, in.schema.Drop())
	}
	return err
}
