package dbpubsub_test

import (
	"context"
	"sync"
	"testing"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) { pubsubtest.Run(t, harness(false)) }

// TestConformanceConfirmAck runs the suite with Acks that return once
// committed.
func TestConformanceConfirmAck(t *testing.T) { pubsubtest.Run(t, harness(true)) }

// TestConformanceWrapped runs the suite through a wrapping Topic: every
// ability stays reachable.
func TestConformanceWrapped(t *testing.T) { pubsubtest.Run(t, pubsubtest.Wrap(harness(false))) }

func harness(confirmAck bool) pubsubtest.Harness {
	var dsns sync.Map // *dbpubsub.PubSub -> the DSN of its schema
	options := func(cfg pubsubtest.Config) dbpubsub.Options {
		return dbpubsub.Options{Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize, ConfirmAck: confirmAck,
			OnFailure: cfg.OnFailure}
	}
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			dsn, db := newStore(t)
			ps := newPubSub(t, db, options(cfg))
			dsns.Store(ps, dsn)
			return ps
		},
		Reopen: func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			dsn, ok := dsns.Load(ps)
			if !ok {
				t.Fatal("Reopen of a PubSub not made by New")
			}
			other := newPubSub(t, openDB(t, dsn.(string)), options(cfg))
			dsns.Store(other, dsn)
			return other
		},
		Register: func(t testing.TB, ctx context.Context) error {
			_, db := newStore(t)
			if err := di.RegisterSingleton(ctx, db); err != nil {
				return err
			}
			if confirmAck {
				return dbpubsub.RegisterWithOptions(ctx, dbpubsub.Options{ConfirmAck: true})
			}
			return dbpubsub.Register(ctx)
		},
		Abilities: abilities(),
	}
}

func abilities() pubsubtest.Abilities {
	a := pubsubtest.AllMessageAbilities()
	a.Durable, a.Shared = true, true
	a.FailureHook = true
	return a
}
