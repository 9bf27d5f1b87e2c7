package backend

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Options are the options every backend has.
type Options struct {
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload accepted, in bytes. 0 means
	// pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// Logger receives what no caller can be given. nil means
	// slog.Default().
	Logger *slog.Logger
}

// Resolve returns o with its defaults applied, or an error naming the
// first field that makes no sense, as pkg's Options.Field. storeMax is the
// largest payload the store can keep (0: no limit of its own) and what it
// is called in the error.
func (o Options) Resolve(pkg string, storeMax int, storeMaxName string) (Options, error) {
	switch {
	case o.Lease < 0:
		return o, fmt.Errorf("%s: Options.Lease is %v, want 0 (default) or more", pkg, o.Lease)
	case o.MaxDataSize < 0:
		return o, fmt.Errorf("%s: Options.MaxDataSize is %d, want 0 (default) or more", pkg, o.MaxDataSize)
	case storeMax > 0 && o.MaxDataSize > storeMax:
		return o, fmt.Errorf("%s: Options.MaxDataSize is %d, want 0 (default) to %d (%s)", pkg, o.MaxDataSize, storeMax, storeMaxName)
	}
	if err := o.Retry.Validate(); err != nil {
		return o, fmt.Errorf("%s: Options.Retry: %w", pkg, err)
	}
	o.Retry = o.Retry.WithDefaults()
	if o.Lease == 0 {
		o.Lease = pubsub.DefaultLease
	}
	if o.MaxDataSize == 0 {
		o.MaxDataSize = pubsub.DefaultMaxDataSize
		if storeMax > 0 {
			o.MaxDataSize = min(o.MaxDataSize, storeMax)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
