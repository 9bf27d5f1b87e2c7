package channelpubsub

import (
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// DefaultCapacity is the buffer of each topic's channel: how many ready
// messages a topic holds before Enqueue blocks.
const DefaultCapacity = 10

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
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Capacity < 0:
		return o, fmt.Errorf("channelpubsub: Options.Capacity is %d, want 0 (default) or more", o.Capacity)
	case o.Lease < 0:
		return o, fmt.Errorf("channelpubsub: Options.Lease is %v, want 0 (default) or more", o.Lease)
	case o.MaxDataSize < 0:
		return o, fmt.Errorf("channelpubsub: Options.MaxDataSize is %d, want 0 (default) or more", o.MaxDataSize)
	}
	if err := o.Retry.Validate(); err != nil {
		return o, fmt.Errorf("channelpubsub: Options.Retry: %w", err)
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Lease == 0 {
		o.Lease = pubsub.DefaultLease
	}
	if o.MaxDataSize == 0 {
		o.MaxDataSize = pubsub.DefaultMaxDataSize
	}
	o.Retry = o.Retry.WithDefaults()
	return o, nil
}
