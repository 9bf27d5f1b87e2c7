package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// conveyor dbpubsub with its defaults (acks queued and written in groups,
// as River's completer and watermill-sql's offsets do), on dbpubsub.Open's
// pool; the same with Options.ConfirmAck (each Ack returns once
// committed), also drained by many consumer goroutines (as River's tuned
// configuration has many workers), on the drain only; and the defaults
// publishing to a topic without subscriptions, on the fan-out only (its
// baseline); and the defaults traced and measured by otelconveyor, on the
// drain only.
type conveyorDB struct {
	consumers  int      // 0: W
	confirmAck bool     // Options.ConfirmAck
	noSubs     bool     // the fan-out without subscriptions
	manySubs   bool     // the fan-out to manyFanOutSubs subscriptions
	otel       otelMode // wrapped by otelconveyor, and how it samples (otel.go)
}

const conveyorManyConsumers = 128

// manyFanOutSubs is the number of subscriptions of the wide fan-out
// (issue 35: its publish against the plain topic's).
const manyFanOutSubs = 16

// conveyorTopic is the topic the conveyor systems use.
const conveyorTopic = "bench"

func init() {
	register(conveyorDB{})
	register(conveyorDB{confirmAck: true})
	register(conveyorDB{confirmAck: true, consumers: conveyorManyConsumers})
	register(conveyorDB{noSubs: true})
	register(conveyorDB{manySubs: true})
	register(conveyorDB{otel: otelAll})
	register(conveyorDB{otel: otelSampled})
}

func (c conveyorDB) Name() string {
	switch {
	case c.consumers > 0:
		return fmt.Sprintf("conveyor dbpubsub (ConfirmAck, %d consumers)", c.consumers)
	case c.confirmAck:
		return "conveyor dbpubsub (ConfirmAck)"
	case c.noSubs:
		return "conveyor dbpubsub (no subscriptions)"
	case c.manySubs:
		return fmt.Sprintf("conveyor dbpubsub (%d subscriptions)", manyFanOutSubs)
	case c.otel != otelOff:
		return "conveyor dbpubsub" + c.otel.suffix()
	}
	return "conveyor dbpubsub"
}

func (c conveyorDB) options() dbpubsub.Options {
	return dbpubsub.Options{Logger: quietLogger(), ConfirmAck: c.confirmAck}
}
func (conveyorDB) Kind() Kind     { return KindPostgres }
func (conveyorDB) Baseline() bool { return false }
func (c conveyorDB) Config(cfg Config) string {
	workers := fmt.Sprintf("W goroutines Dequeue+Ack; fan-out: %d subscriptions (pubsub.Subscribe), W/%d goroutines Dequeue+Ack each", fanOutSubs, fanOutSubs)
	switch {
	case c.consumers > 0:
		workers = fmt.Sprintf("%d goroutines Dequeue+Ack (drain only)", c.consumers)
	case c.noSubs:
		workers = "fan-out only: the plain topic, no subscription, W goroutines Dequeue+Ack on its default subscription"
	case c.manySubs:
		workers = fmt.Sprintf("fan-out only: %d subscriptions (pubsub.Subscribe), one goroutine Dequeue+Ack each", manyFanOutSubs)
	case c.otel != otelOff:
		workers = "W goroutines Dequeue+Ack, as conveyor dbpubsub; " + c.otel.config() +
			"; drain only: a process span per delivery (the prefill's send spans, one per batch, are not timed)"
	}
	opts := "dbpubsub.Options{}"
	if c.confirmAck {
		opts = "dbpubsub.Options{ConfirmAck: true}"
	}
	return fmt.Sprintf("%s (ClaimBatch %d, Prefetch %d, PollInterval %v + LISTEN/NOTIFY), "+
		"dbpubsub.Open pool of %d conns; %s; batch: pubsub.EnqueueBatch",
		opts, dbpubsub.DefaultClaimBatch, dbpubsub.DefaultPrefetch, dbpubsub.DefaultPollInterval, conveyorPool(), workers)
}

// Scenarios limits the many-consumers variant and the OTel one to the
// drain (the OTel one's overhead is measured there), and the
// ConfirmAck variant to the consuming scenarios (its enqueues are those of
// the defaults). The backlog of a million messages runs on the defaults
// only, to keep the run within its time budget.
func (c conveyorDB) Scenarios() []string {
	switch {
	case c.consumers > 0, c.otel != otelOff:
		return []string{ScDrain}
	case c.confirmAck:
		return []string{ScDrain, ScLatency, ScFanOut}
	case c.noSubs, c.manySubs:
		return []string{ScFanOut}
	}
	return []string{ScEnqueue, ScBatch, ScDrain, ScLatency, ScBacklog, ScFanOut}
}

// FanOutSubs is fanOutSubs, or none for the plain topic's variant.
func (c conveyorDB) FanOutSubs() int {
	switch {
	case c.noSubs:
		return 0
	case c.manySubs:
		return manyFanOutSubs
	}
	return fanOutSubs
}

func conveyorPool() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

type conveyorDBInstance struct {
	consumers int // 0: as many as asked
	schema    *Schema
	db        *bun.DB
	ps        *dbpubsub.PubSub
	pub       pubsub.PubSub // what the topics are opened on: ps, or its wrapping
	otel      *otelSDK      // nil: not wrapped
	topic     pubsub.Topic
}

func (c conveyorDB) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	in, err := openConveyorDB(ctx, env, c.options())
	if err != nil {
		return nil, err
	}
	in.consumers = c.consumers
	if c.otel != otelOff {
		if in.otel, err = newOTelSDK(c.otel); err != nil {
			return nil, errors.Join(err, in.Close())
		}
		// The topic is opened on the wrapping instead: close the handle
		// opened on ps (closing a handle leaves the others alone).
		if err := in.topic.Close(); err != nil {
			return nil, errors.Join(err, in.Close())
		}
		in.pub = in.otel.tel.Wrap(in.ps)
		in.topic = in.pub.Topic(conveyorTopic)
	}
	return in, nil
}

func openConveyorDB(ctx context.Context, env *Env, opts dbpubsub.Options) (*conveyorDBInstance, error) {
	schema, err := env.NewSchema(ctx, "conveyor")
	if err != nil {
		return nil, err
	}
	in := &conveyorDBInstance{schema: schema}
	if in.db, err = dbpubsub.Open(schema.DSN); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if err := migrations.Migrate(ctx, in.db); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	in.ps, err = dbpubsub.New(in.db, opts)
	if err != nil {
		return nil, errors.Join(err, in.Close())
	}
	in.pub = in.ps
	in.topic = in.ps.Topic(conveyorTopic)
	return in, nil
}

func (in *conveyorDBInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Enqueue(ctx, payload(m))
}

func (in *conveyorDBInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	return enqueueBatch(ctx, in.topic, ms)
}

// Subscribe makes subscription name of the topic; the topic's handle
// (in.topic) publishes to it.
func (in *conveyorDBInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	return subscribeTopic(ctx, in.pub, conveyorTopic, name)
}

func (in *conveyorDBInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	if in.consumers > 0 {
		workers = in.consumers
	}
	return consumeTopic(ctx, in.topic, workers, handle, done), nil
}

func (in *conveyorDBInstance) Close() error {
	var errs []error
	if in.ps != nil {
		// Through the wrapping, if any, which closes ps.
		errs = append(errs, in.pub.(io.Closer).Close())
	}
	if in.otel != nil {
		errs = append(errs, in.otel.shutdown())
	}
	if in.db != nil {
		errs = append(errs, in.db.Close())
	}
	errs = append(errs, in.schema.Drop())
	return errors.Join(errs...)
}

// quietLogger drops everything below errors, so the table stays readable.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}
