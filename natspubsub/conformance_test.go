package natspubsub_test

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

func TestConformance(t *testing.T) { pubsubtest.Run(t, harness(t, natspubsub.Options{})) }

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) {
	pubsubtest.Run(t, pubsubtest.Wrap(harness(t, natspubsub.Options{})))
}

// TestConformanceConfirmAck runs the suite with acks the server confirms
// before Ack returns.
func TestConformanceConfirmAck(t *testing.T) {
	pubsubtest.Run(t, harness(t, natspubsub.Options{ConfirmAck: true}))
}

// harness makes the suite's PubSubs with base, its fields that the suite
// sets aside.
func harness(t *testing.T, base natspubsub.Options) pubsubtest.Harness {
	url := natstest.URL(t)
	var prefixes sync.Map // *natspubsub.PubSub -> its Options.Prefix
	options := func(prefix string, cfg pubsubtest.Config) natspubsub.Options {
		o := base
		o.Prefix, o.Retry, o.Lease, o.MaxDataSize, o.UniqueWindow = prefix, cfg.Retry, cfg.Lease, cfg.MaxDataSize, uniqueWindow
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
			return natspubsub.RegisterWithOptions(ctx, natspubsub.Options{Prefix: natstest.Prefix(t, url)})
		},
		Abilities:   abilities(),
		LargestData: probe.MaxDataSize(),
	}
}

// uniqueWindow is the suite's duplicate window: long enough for its unique
// cases, short enough to wait out.
const uniqueWindow = 2 * time.Second

// abilities are what JetStream offers conveyor so far (doc.go).
func abilities() pubsubtest.Abilities {
	return pubsubtest.Abilities{
		Durable: true, Shared: true,
		Delay: true, Unique: true, UniqueWindow: uniqueWindow, Inbox: true,
		DeadLetters: true, Stats: true, OldestReady: true,
		Attempts: true, ExtendLease: true, FailReasons: true, Reject: true,
		Subscriptions: true, FailureHook: true,
		// Peek and Cancel are not offered (inspect.go).
		TopicList: true, DeleteDead: true,
		// Pause: JetStream 2.9 cannot pause a consumer (2.11 can).
		// AckCount is not offered: natspubsub does not count acks.
	}
}
