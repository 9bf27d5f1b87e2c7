// Package natspubsubtest helps tests run natspubsub against a real NATS
// server with JetStream: each PubSub gets a stream prefix of its own, whose
// streams are deleted when the test ends.
//
//	pubsubtest.Run(t, natspubsubtest.Harness(t, natspubsub.Options{ConfirmAck: true}))
//
// The server is $NATS_URL when set, else the one on 127.0.0.1:4222;
// without either the test fails, saying how to get one (`make test` starts
// a throwaway server). It never skips.
package natspubsubtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

// UniqueWindow is the harness's duplicate window: long enough for the
// suite's unique cases, short enough to wait out.
const UniqueWindow = 2 * time.Second

// Harness is the conformance suite's harness for natspubsub with base's
// options (ConfirmAck, ...) and the suite's retry policy, lease and size
// limit: each New gets a stream prefix of its own, and Reopen a second
// connection to the same streams, as another process would.
func Harness(t testing.TB, base natspubsub.Options) pubsubtest.Harness {
	url := natstest.URL(t)
	var prefixes sync.Map // *natspubsub.PubSub -> its Options.Prefix
	options := func(prefix string, cfg pubsubtest.Config) natspubsub.Options {
		o := base
		o.Prefix, o.Retry, o.Lease, o.MaxDataSize, o.UniqueWindow = prefix, cfg.Retry, cfg.Lease, cfg.MaxDataSize, UniqueWindow
		o.OnFailure = cfg.OnFailure
		return o
	}
	open := func(t testing.TB, o natspubsub.Options) *natspubsub.PubSub {
		ps, err := natspubsub.Connect(url, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		prefixes.Store(ps, o.Prefix)
		return ps
	}
	probe := open(t, natspubsub.Options{Prefix: natstest.Prefix(t, url)})
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			return open(t, options(natstest.Prefix(t, url), cfg))
		},
		Reopen: func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			prefix, ok := prefixes.Load(ps)
			if !ok {
				t.Fatal("Reopen of a PubSub not made by New")
			}
			return open(t, options(prefix.(string), cfg))
		},
		Register: func(t testing.TB, ctx context.Context) error {
			nc, err := nats.Connect(url)
			if err != nil {
				return err
			}
			t.Cleanup(nc.Close)
			if err := di.RegisterBorrowed(ctx, nc); err != nil {
				return err
			}
			o := base
			o.Prefix = natstest.Prefix(t, url)
			return natspubsub.RegisterWithOptions(ctx, o)
		},
		Abilities:   Abilities(),
		LargestData: probe.MaxDataSize(),
	}
}

// Abilities are what JetStream offers conveyor so far (natspubsub's doc).
func Abilities() pubsubtest.Abilities {
	return pubsubtest.Abilities{
		Durable: true, Shared: true,
		Delay: true, Unique: true, UniqueWindow: UniqueWindow, Inbox: true,
		// A batch is sent together, not all or none (JetStream 2.9 has no
		// atomic batch; 2.12 does).
		Pipelined:   true,
		DeadLetters: true, Stats: true, OldestReady: true,
		Attempts: true, ExtendLease: true, FailReasons: true, Reject: true,
		Subscriptions: true, FailureHook: true, Quiesce: true,
		// Peek and Cancel are not offered (natspubsub/inspect.go).
		TopicList: true, DeleteDead: true,
		// Pause: JetStream 2.9 cannot pause a consumer (2.11 can).
		// AckCount is not offered: natspubsub does not count acks.
	}
}
