package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conveyorgo/conveyor/channelpubsub"
)

// The baseline of the in-memory event systems, their limit written by
// hand: json.Marshal the Order, send the bytes on a buffered Go channel of
// channelpubsub's default capacity, and W goroutines json.Unmarshal and
// call the handler. No ids, envelope, routing, acks or recovery.
type jsonChan struct{ eventSystem }

func init() { register(jsonChan{}) }

func (jsonChan) Name() string   { return "baseline: JSON over a Go channel" }
func (jsonChan) Kind() Kind     { return KindMemory }
func (jsonChan) Baseline() bool { return true }
func (jsonChan) Config(Config) string {
	return fmt.Sprintf("W goroutines json.Marshal the event and send it on make(chan []byte, %d) (channelpubsub's default "+
		"capacity); W goroutines receive, json.Unmarshal and call the handler", channelpubsub.DefaultCapacity)
}

type jsonChanInstance struct{ ch chan []byte }

func (jsonChan) Open(context.Context, *Env, Config) (Instance, error) {
	return &jsonChanInstance{ch: make(chan []byte, channelpubsub.DefaultCapacity)}, nil
}

func (in *jsonChanInstance) Enqueue(ctx context.Context, m Msg) error {
	b, err := json.Marshal(newOrder(m))
	if err != nil {
		return err
	}
	select {
	case in.ch <- b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (in *jsonChanInstance) Consume(ctx context.Context, workers int, handle func(Msg), done func()) (func() error, error) {
	return startWorkers(ctx, workers, func(ctx context.Context) error {
		for {
			select {
			case b := <-in.ch:
				var o Order
				if err := json.Unmarshal(b, &o); err != nil {
					return err
				}
				handle(o.msg())
				done()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}), nil
}

func (in *jsonChanInstance) Close() error { return nil }
