package channelpubsub

import (
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// DefaultCapacity is the buffer of each topic's channel: how many ready
// messages a topic holds before Enqueue blocks.
const DefaultCapacity = 10

// DefaultRetention is how long the unique key of an acked message stays
// taken, as dbpubsub keeps a finished row (dbpubsub.DefaultRetention).
const DefaultRetention = 24 * time.Hour

// DefaultDeadRetention is how long a dead message is kept, as dbpubsub
// keeps a dead row (dbpubsub.DefaultDeadRetention).
const DefaultDeadRetention = 30 * 24 * time.Hour

// Options configures a PubSub. The zero value means the defaults.
type Options struct {
	// Capacity is each topic's channel buffer. 0 means DefaultCapacity.
	Capacity int
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload Enqueue accepts, in bytes. 0 means
	// pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// Retention is how long the unique key of an acked message stays taken
	// (pubsub.UniqueEnqueuer: a finished message keeps its key until it is
	// pruned), as on dbpubsub; only the key is kept. 0 means
	// DefaultRetention.
	Retention time.Duration
	// DeadRetention is how long a dead message is kept after it died,
	// with its unique key. 0 means DefaultDeadRetention; a negative value
	// keeps it until re-queued or purged.
	DeadRetention time.Duration
	// OnFailure, when set, is handed each message that goes dead
	// (pubsub.Failure of Kind pubsub.Dead, with its Cause), in a goroutine
	// of its own (see pubsub.Failure for what happens when it is slow);
	// Close waits for it to have had them. nil reports nothing, as
	// channelpubsub has no log.
	OnFailure func(pubsub.Failure)
}

func (o Options) withDefaults() (Options, error) {
	if o.Capacity < 0 {
		return o, fmt.Errorf("channelpubsub: Options.Capacity is %d, want 0 (default) or more", o.Capacity)
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Retention < 0 {
		return o, fmt.Errorf("channelpubsub: Options.Retention is %v, want 0 (default) or more", o.Retention)
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.DeadRetention == 0 {
		o.DeadRetention = DefaultDeadRetention
	}
	shared, err := engine.Options{Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize}.Resolve()
	if err != nil {
		return o, err
	}
	o.Retry, o.Lease, o.MaxDataSize = shared.Retry, shared.Lease, shared.MaxDataSize
	return o, nil
}
