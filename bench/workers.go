package main

import (
	"context"
	"errors"
	"sync"

	"github.com/conveyorgo/conveyor/pubsub"
)

// startWorkers runs loop in w goroutines until ctx ends; stop waits for
// them and returns the first error other than ctx's.
func startWorkers(ctx context.Context, w int, loop func(ctx context.Context) error) func() error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	return func() error {
		wg.Wait()
		return first
	}
}

// consumeTopic is Consume for a conveyor topic: w goroutines Dequeue, hand
// the message to handle in its handling context, as a real consumer does
// (pubsub.HandlingContext: the span of its processing on a PubSub wrapped
// by otelconveyor, else ctx itself), Ack it (even once ctx has ended, so
// that no handled message stays unsettled) and call done.
func consumeTopic(ctx context.Context, tp pubsub.Topic, w int, handle func(Msg), done func()) func() error {
	return startWorkers(ctx, w, func(ctx context.Context) error {
		for {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				return err
			}
			hctx := pubsub.HandlingContext(ctx, m)
			handle(parsePayload(m.Data()))
			if err := m.Ack(context.WithoutCancel(hctx)); err != nil {
				return err
			}
			done()
		}
	})
}

// subscribeTopic is FanOuter.Subscribe for a conveyor PubSub: it makes
// subscription name of topic with pubsub.Subscribe, consumed as
// consumeTopic does; a backend without subscriptions gives
// errNoSubscriptions.
func subscribeTopic(ctx context.Context, ps pubsub.PubSub, topic, name string) (ConsumeFunc, error) {
	tp, err := pubsub.Subscribe(ctx, ps, topic, name)
	if errors.Is(err, pubsub.ErrUnsupported) {
		return nil, errNoSubscriptions
	}
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
		return consumeTopic(ctx, tp, workers, handle, done), nil
	}, nil
}

// enqueueBatch is EnqueueBatch for a conveyor topic: pubsub.EnqueueBatch.
func enqueueBatch(ctx context.Context, tp pubsub.Topic, ms []Msg) error {
	data := make([][]byte, len(ms))
	for i, m := range ms {
		data[i] = payload(m)
	}
	return pubsub.EnqueueBatch(ctx, tp, data)
}
