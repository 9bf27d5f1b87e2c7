// Package sqlitepubsubtest runs conveyor's conformance suite (package
// pubsubtest) on sqlitepubsub, for its own tests and for those of a
// wrapper (otelconveyor): each PubSub on a SQLite file of its own in the
// test's temporary directory, removed with it.
//
//	func TestConformance(t *testing.T) { pubsubtest.Run(t, sqlitepubsubtest.Harness()) }
package sqlitepubsubtest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/pubsubtest"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// Harness makes each PubSub on a file of its own in the test's temporary
// directory, and Reopen a second PubSub on the same file (its own
// connections), as another process would. The files are
// synchronous=NORMAL: a commit survives the process, which is what the
// suite can observe.
func Harness() pubsubtest.Harness {
	var paths sync.Map // *sqlitepubsub.PubSub -> its file
	options := func(cfg pubsubtest.Config) sqlitepubsub.Options {
		return sqlitepubsub.Options{Retry: cfg.Retry, Lease: cfg.Lease, MaxDataSize: cfg.MaxDataSize, OnFailure: cfg.OnFailure,
			Synchronous: "NORMAL"}
	}
	open := func(t testing.TB, path string, cfg pubsubtest.Config) *sqlitepubsub.PubSub {
		ps, err := sqlitepubsub.Open(path, options(cfg))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		paths.Store(ps, path)
		return ps
	}
	return pubsubtest.Harness{
		New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
			return open(t, filepath.Join(t.TempDir(), "conveyor.db"), cfg)
		},
		Reopen: func(t testing.TB, cfg pubsubtest.Config, ps pubsub.PubSub) pubsub.PubSub {
			path, ok := paths.Load(ps)
			if !ok {
				t.Fatal("Reopen of a PubSub not made by New")
			}
			return open(t, path.(string), cfg)
		},
		Register: func(t testing.TB, ctx context.Context) error {
			db, err := sqlitepubsub.OpenDB(filepath.Join(t.TempDir(), "conveyor.db"), "NORMAL")
			if err != nil {
				return err
			}
			if err := di.RegisterSingleton(ctx, db); err != nil {
				return err
			}
			return sqlitepubsub.Register(ctx)
		},
		Abilities: Abilities(),
	}
}

// Abilities are sqlitepubsub's: every message ability, durable, shared
// by PubSubs on one file, the failure hook and the quiesce gate.
func Abilities() pubsubtest.Abilities {
	a := pubsubtest.AllMessageAbilities()
	a.Durable, a.Shared, a.FailureHook, a.Quiesce = true, true, true, true
	return a
}
