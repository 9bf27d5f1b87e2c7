package sqlitepubsub

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// Defaults of Options.
const (
	// DefaultPollInterval is how often a waiting consumer looks for
	// messages that no enqueue of this process announced: those of other
	// processes, of the app's transactions, and delayed ones coming due.
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultSynchronous is the synchronous setting of the connections
	// Open and OpenDB make: a committed enqueue or ack survives a power
	// loss (docs/design/sqlitepubsub.md).
	DefaultSynchronous = "FULL"
	// DefaultRetention is how long an acked message is kept (with its
	// unique key, and counted by AckedSince).
	DefaultRetention = 24 * time.Hour
	// DefaultDeadRetention is how long a dead message is kept after it
	// died.
	DefaultDeadRetention = 30 * 24 * time.Hour
	// DefaultPruneInterval is how often acked and dead messages past their
	// retention are deleted.
	DefaultPruneInterval = time.Minute
)

// Options configures a PubSub. The zero value means the defaults.
type Options struct {
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload Enqueue accepts, in bytes. 0
	// means pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// PollInterval is how often a waiting consumer looks for messages no
	// enqueue of this PubSub woke it for (other processes', the app's
	// transactions', delayed ones due). 0 means DefaultPollInterval.
	PollInterval time.Duration
	// RescueInterval is how often this PubSub hands out again the
	// messages whose lease ran out (those of any process). 0 means
	// Lease/4, between 10 ms and 1 s.
	RescueInterval time.Duration
	// Retention is how long acked messages are kept. 0 means
	// DefaultRetention.
	Retention time.Duration
	// DeadRetention is how long dead messages are kept after they died. 0
	// means DefaultDeadRetention; a negative value keeps them until
	// re-queued or purged.
	DeadRetention time.Duration
	// PruneInterval is how often messages past Retention and
	// DeadRetention are deleted. 0 means DefaultPruneInterval; a negative
	// value turns pruning off in this PubSub.
	PruneInterval time.Duration
	// Synchronous is the PRAGMA synchronous of the connections that Open
	// makes: "FULL" (DefaultSynchronous: a commit survives a power loss)
	// or "NORMAL" (a commit survives a crash of the process; a power loss
	// may undo the last ones, never corrupt the file). New leaves the
	// caller's DB as it is.
	Synchronous string
	// OnFailure, when set, is handed each failure no caller is returned
	// (see pubsub.Failure): each message that goes dead, with its cause,
	// in a goroutine of its own. nil reports nothing.
	OnFailure func(pubsub.Failure)
	// Logger receives the errors no caller can be given (a failed rescue
	// or pruning). nil means slog.Default().
	Logger *slog.Logger
}

// maxBlob is SQLite's default SQLITE_MAX_LENGTH, the largest BLOB it
// stores.
const maxBlob = 1_000_000_000

func (o Options) withDefaults() (Options, error) {
	fail := func(field string, v any, want string) (Options, error) {
		return o, fmt.Errorf("%w: Options.%s is %v, want %s", ErrInvalidOptions, field, v, want)
	}
	switch {
	case o.PollInterval < 0:
		return fail("PollInterval", o.PollInterval, "0 (default) or more")
	case o.RescueInterval < 0:
		return fail("RescueInterval", o.RescueInterval, "0 (default) or more")
	case o.Retention < 0:
		return fail("Retention", o.Retention, "0 (default) or more")
	case o.MaxDataSize > maxBlob:
		return fail("MaxDataSize", o.MaxDataSize, "at most 1e9, SQLite's largest BLOB")
	}
	switch s := strings.ToUpper(o.Synchronous); s {
	case "":
		o.Synchronous = DefaultSynchronous
	case "FULL", "NORMAL", "EXTRA":
		o.Synchronous = s
	default:
		return fail("Synchronous", fmt.Sprintf("%q", o.Synchronous), `"FULL" (default), "NORMAL" or "EXTRA"`)
	}
	shared, err := engine.Options{Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize}.Resolve()
	if err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	o.Retry, o.Lease, o.MaxDataSize = shared.Retry, shared.Lease, shared.MaxDataSize
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RescueInterval == 0 {
		o.RescueInterval = min(max(o.Lease/4, 10*time.Millisecond), time.Second)
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.DeadRetention == 0 {
		o.DeadRetention = DefaultDeadRetention
	}
	if o.PruneInterval == 0 {
		o.PruneInterval = DefaultPruneInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
