package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	gcpubsub "gocloud.dev/pubsub"
	"gocloud.dev/pubsub/mempubsub"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// The in-memory systems. Each is measured on the round trip: W producers
// and W consumers at once; conveyor's also on the fan-out.

// conveyor channelpubsub with its defaults; and the same traced and
// measured by otelconveyor, on the round trip only.
type conveyorChan struct {
	otel otelMode // wrapped by otelconveyor, and how it samples (otel.go)
}

func init() {
	register(conveyorChan{})
	register(conveyorChan{otel: otelAll})
	register(conveyorChan{otel: otelSampled})
}

func (c conveyorChan) Name() string {
	if c.otel != otelOff {
		return "conveyor channelpubsub" + c.otel.suffix()
	}
	return "conveyor channelpubsub"
}
func (conveyorChan) Kind() Kind     { return KindMemory }
func (conveyorChan) Baseline() bool { return false }
func (c conveyorChan) Config(Config) string {
	if c.otel != otelOff {
		return fmt.Sprintf("channelpubsub.New() (defaults), W goroutines Enqueue, W Dequeue+Ack, as conveyor channelpubsub; %s; round trip only: two spans per message, send and process", c.otel.config())
	}
	return fmt.Sprintf("channelpubsub.New() (defaults: Capacity %d, lease %v); W goroutines Enqueue, W Dequeue+Ack; "+
		"fan-out: %d subscriptions (pubsub.Subscribe), W/%d goroutines Dequeue+Ack each, batches: pubsub.EnqueueBatch",
		channelpubsub.DefaultCapacity, pubsub.DefaultLease, fanOutSubs, fanOutSubs)
}

// Scenarios limits the OTel variant to the round trip, the line its
// overhead is measured on.
func (c conveyorChan) Scenarios() []string {
	if c.otel != otelOff {
		return []string{ScRoundtrip}
	}
	return nil
}

type conveyorChanInstance struct {
	ps    pubsub.PubSub // a *channelpubsub.PubSub, or its wrapping
	otel  *otelSDK      // nil: not wrapped
	topic pubsub.Topic
}

func (c conveyorChan) Open(context.Context, *Env, Config) (Instance, error) {
	in := &conveyorChanInstance{ps: channelpubsub.New()}
	if c.otel != otelOff {
		sdk, err := newOTelSDK(c.otel)
		if err != nil {
			return nil, errors.Join(err, in.ps.(io.Closer).Close())
		}
		in.otel, in.ps = sdk, sdk.tel.Wrap(in.ps)
	}
	in.topic = in.ps.Topic(conveyorTopic)
	return in, nil
}

// FanOutSubs makes it run the fan-out scenario.
func (conveyorChan) FanOutSubs() int { return fanOutSubs }

func (in *conveyorChanInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Enqueue(ctx, payload(m))
}

func (in *conveyorChanInstance) EnqueueBatch(ctx context.Context, ms []Msg) error {
	return enqueueBatch(ctx, in.topic, ms)
}

func (in *conveyorChanInstance) Subscribe(ctx context.Context, name string) (ConsumeFunc, error) {
	return subscribeTopic(ctx, in.ps, conveyorTopic, name)
}

func (in *conveyorChanInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return consumeTopic(ctx, in.topic, workers, handle, done), nil
}

// Close closes the PubSub (through its wrapping, if any) and stops the
// SDK.
func (in *conveyorChanInstance) Close() error {
	err := in.ps.(io.Closer).Close()
	if in.otel != nil {
		err = errors.Join(err, in.otel.shutdown())
	}
	return err
}

// Watermill's GoChannel with its defaults. It fans every message out to
// every subscription, so the W consumers share one subscription's channel.
type watermillChan struct{}

func init() { register(watermillChan{}) }

func (watermillChan) Name() string   { return "watermill gochannel" }
func (watermillChan) Kind() Kind     { return KindMemory }
func (watermillChan) Baseline() bool { return false }
func (watermillChan) Config(Config) string {
	return "watermill v1.5.1 gochannel.Config{} (defaults: OutputChannelBuffer 0, not persistent, " +
		"publish does not wait for acks); one subscription read by W goroutines (each subscription gets every message)"
}

type watermillChanInstance struct{ gc *gochannel.GoChannel }

func (watermillChan) Open(context.Context, *Env, Config) (Instance, error) {
	return &watermillChanInstance{gc: gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})}, nil
}

func (in *watermillChanInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.gc.Publish("bench", message.NewMessage(watermill.NewUUID(), payload(m)))
}

func (in *watermillChanInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	ch, err := in.gc.Subscribe(ctx, "bench")
	if err != nil {
		return nil, err
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

func (in *watermillChanInstance) Close() error { return in.gc.Close() }

// gocloud.dev's mempubsub with its defaults: one subscription, received
// from W goroutines (competing consumers).
type goCloudMem struct{}

func init() { register(goCloudMem{}) }

const goCloudAckDeadline = time.Minute

func (goCloudMem) Name() string   { return "gocloud mempubsub" }
func (goCloudMem) Kind() Kind     { return KindMemory }
func (goCloudMem) Baseline() bool { return false }
func (goCloudMem) Config(Config) string {
	return fmt.Sprintf("gocloud.dev v0.47.0 mempubsub.NewTopic(), NewSubscription(ack deadline %v), default batchers; "+
		"W goroutines Send, W goroutines Receive+Ack", goCloudAckDeadline)
}

type goCloudInstance struct {
	topic *gcpubsub.Topic
	sub   *gcpubsub.Subscription
}

func (goCloudMem) Open(context.Context, *Env, Config) (Instance, error) {
	t := mempubsub.NewTopic()
	return &goCloudInstance{topic: t, sub: mempubsub.NewSubscription(t, goCloudAckDeadline)}, nil
}

func (in *goCloudInstance) Enqueue(ctx context.Context, m Msg) error {
	return in.topic.Send(ctx, &gcpubsub.Message{Body: payload(m)})
}

func (in *goCloudInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return startWorkers(ctx, workers, func(ctx context.Context) error {
		for {
			m, err := in.sub.Receive(ctx)
			if err != nil {
				return err
			}
			handle(parsePayload(m.Body))
			m.Ack()
			done()
		}
	}), nil
}

func (in *goCloudInstance) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(in.topic.Shutdown(ctx), in.sub.Shutdown(ctx))
}

// The baseline of the in-memory systems: a raw buffered Go channel of the
// same capacity as channelpubsub's default, the limit of any channel-based
// queue.
type rawChan struct{}

func init() { register(rawChan{}) }

func (rawChan) Name() string   { return "baseline: raw Go channel" }
func (rawChan) Kind() Kind     { return KindMemory }
func (rawChan) Baseline() bool { return true }
func (rawChan) Config(Config) string {
	return fmt.Sprintf("make(chan []byte, %d) (channelpubsub's default capacity); W goroutines send, W receive",
		channelpubsub.DefaultCapacity)
}

type rawChanInstance struct{ ch chan []byte }

func (rawChan) Open(context.Context, *Env, Config) (Instance, error) {
	return &rawChanInstance{ch: make(chan []byte, channelpubsub.DefaultCapacity)}, nil
}

func (in *rawChanInstance) Enqueue(ctx context.Context, m Msg) error {
	select {
	case in.ch <- payload(m):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (in *rawChanInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return startWorkers(ctx, workers, func(ctx context.Context) error {
		for {
			select {
			case b := <-in.ch:
				handle(parsePayload(b))
				done()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}), nil
}

func (in *rawChanInstance) Close() error { return nil }
