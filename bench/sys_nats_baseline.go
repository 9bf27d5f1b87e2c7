package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The baseline of the NATS systems: what a user would write with nats.go's
// jetstream package and nothing else. A stream with the defaults (limits
// retention, file storage); publishes with PublishAsync, waiting for the
// PubAcks before the call returns; a durable pull consumer read by W
// goroutines, each fetching batches and acking each message (Ack: no
// confirmation awaited).
type natsBaseline struct{}

func init() { register(natsBaseline{}) }

const (
	// natsFetchBatch is how many messages one Fetch of the baseline asks for.
	natsFetchBatch = 100
	// natsFetchWait bounds one Fetch while no message comes.
	natsFetchWait = 5 * time.Second
)

func (natsBaseline) Name() string   { return "baseline: nats.go JetStream" }
func (natsBaseline) Kind() Kind     { return KindNATS }
func (natsBaseline) Baseline() bool { return true }

// FanOutSubs makes it run the fan-out scenario: one durable consumer per
// subscription.
func (natsBaseline) FanOutSubs() int { return fanOutSubs }

func (natsBaseline) Config(cfg Config) string {
	return fmt.Sprintf("nats.go v1.53.0 jetstream: a stream with the defaults (limits retention, file storage); "+
		"enqueue: PublishAsync, then waits for its PubAck; batch: PublishAsync of each message, then waits for all "+
		"their PubAcks; a durable pull consumer (AckExplicit, the defaults otherwise) read by W goroutines, each "+
		"Fetch(%d) (until %v without a message) and Ack (not waiting for a confirmation) of each message; "+
		"fan-out: %d durable consumers, W/%d goroutines each", natsFetchBatch, natsFetchWait, fanOutSubs, fanOutSubs)
}

type natsBaselineInstance struct {
	env     *NATSEnv
	prefix  string
	subject string
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	work    jetstream.Consumer
}

func (natsBaseline) Open(ctx context.Context, env *Env, cfg Config) (Instance, error) {
	if env.NATS == nil {
		return nil, errors.New("no NATS server in this run")
	}
	in := &natsBaselineInstance{env: env.NATS, prefix: env.NATS.NewPrefix("js")}
	in.subject = in.prefix + ".msgs"
	var err error
	if in.nc, err = nats.Connect(env.NATS.URL); err != nil {
		return nil, err
	}
	if in.js, err = jetstream.New(in.nc); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if in.stream, err = in.js.CreateStream(ctx, jetstream.StreamConfig{Name: in.prefix, Subjects: []string{in.prefix + ".>"}}); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	if in.work, err = in.consumer(ctx, "work"); err != nil {
		return nil, errors.Join(err, in.Close())
	}
	return in, nil
}

// consumer creates durable pull consumer name.
func (in *natsBaselineInstance) consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	return in.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
}

func (in *natsBaselineInstance) Enqueue(ctx context.Context, m Msg) error {
	f, err := in.js.PublishAsync(in.subject, payload(m))
	if err != nil {
		return err
	}
	return waitPubAck(ctx, f)
}

func (in *natsBaselineInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	fs := make([]jetstream.PubAckFuture, len(ms))
	for i, m := range ms {
		f, err := in.js.PublishAsync(in.subject, payload(m))
		if err != nil {
			return err
		}
		fs[i] = f
	}
	for _, f := range fs {
		if err := waitPubAck(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

func waitPubAck(ctx context.Context, f jetstream.PubAckFuture) error {
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (in *natsBaselineInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return consumeJetStream(ctx, in.work, workers, handle, done), nil
}

func (in *natsBaselineInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	c, err := in.consumer(ctx, name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return consumeJetStream(ctx, c, workers, handle, done), nil
	}, nil
}

// consumeJetStream runs w goroutines that Fetch batches of c and Ack each
// message after handling it.
func consumeJetStream(ctx context.Context, c jetstream.Consumer, w int, handle func(Msg), done func()) func() error {
	return startWorkers(ctx, w, func(ctx context.Context) error {
		for {
			fctx, cancel := context.WithTimeout(ctx, natsFetchWait)
			batch, err := c.Fetch(natsFetchBatch, jetstream.FetchContext(fctx))
			if err != nil {
				cancel()
				return err
			}
			for m := range batch.Messages() {
				handle(parsePayload(m.Data()))
				if err := m.Ack(); err != nil {
					cancel()
					return err
				}
				done()
			}
			cancel()
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
				return err
			}
		}
	})
}

func (in *natsBaselineInstance) Close() error {
	if in.nc == nil {
		return nil
	}
	in.nc.Close()
	return in.env.DeleteStreams(in.prefix)
}
