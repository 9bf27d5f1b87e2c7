package pubsubtest

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Config is what a case asks of the PubSub it gets. A backend must honour
// every field.
type Config struct {
	Retry       pubsub.RetryPolicy
	Lease       time.Duration // 0: the backend's default
	MaxDataSize int           // 0: the backend's default
}

// Features says which optional behaviour a backend has; the cases for a
// missing feature are skipped with a note, never counted as passed.
type Features struct {
	// Durable: messages survive closing a PubSub and opening a new one on
	// the same store (Reopen).
	Durable bool
	// Shared: two PubSubs on one store (Reopen) compete for the same
	// messages, as separate processes would.
	Shared bool
}

// Harness tells the suite how to make a backend.
type Harness struct {
	// New returns a fresh PubSub with an empty store of its own, configured
	// by cfg. The backend is closed by the harness (t.Cleanup).
	New func(t testing.TB, cfg Config) pubsub.PubSub
	// Reopen returns another PubSub on the same store as ps, as another
	// process would open it. Needed by Durable and Shared.
	Reopen func(t testing.TB, cfg Config, ps pubsub.PubSub) pubsub.PubSub
	// Register registers, in the injector carried by ctx, a backend with an
	// empty store of its own, the way an app does (e.g. channelpubsub.Register).
	Register func(t testing.TB, ctx context.Context) error
	// Features lists the optional behaviour under test.
	Features Features
	// Messages is the size of the concurrency case (8 producers and 8
	// consumers). 0 means 10,000.
	Messages int
}
