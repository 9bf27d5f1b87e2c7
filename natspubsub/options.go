package natspubsub

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Defaults of Options.
const (
	// DefaultPrefix starts the names of the streams and subjects of a
	// PubSub.
	DefaultPrefix = "conveyor"
	// DefaultRequestTimeout bounds each request to the server (a publish,
	// an acknowledged settle, a stream or consumer look-up) whose ctx has
	// no earlier deadline.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultUniqueWindow is how long EnqueueUnique remembers a key:
	// NATS's own default duplicate window.
	DefaultUniqueWindow = 2 * time.Minute
	// DefaultInboxRetention is how long an inbox claim is kept: as long
	// as dbpubsub keeps its finished messages and claims by default.
	DefaultInboxRetention = 24 * time.Hour
	// DefaultDeadRetention is how long a dead message is kept: as long as
	// dbpubsub keeps its dead rows by default.
	DefaultDeadRetention = 30 * 24 * time.Hour
	// headerRoom is the part of the server's max_payload kept for the
	// headers conveyor adds to a message (its ID, and a dead message's
	// attempts and last error). A caller's pubsub.Header counts toward
	// Options.MaxDataSize with the data (see wireSize).
	headerRoom = 4 << 10
	// The last error kept with a dead message is bounded, as escaped in
	// its header, by logstore.MaxReasonLen: with its ID, attempts and
	// Nats-Msg-Id it fits in headerRoom beside a message of MaxDataSize.
)

// Options configures a PubSub. The zero value means the defaults.
type Options struct {
	// Prefix starts the names of the PubSub's streams ("<Prefix>_t_…")
	// and subjects ("<Prefix>.t.…"): PubSubs with the same Prefix on one
	// server share their topics. 1 to 32 ASCII letters, digits, '-' or
	// '_'. "" means DefaultPrefix.
	Prefix string
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again: the consumers' AckWait. 0 means
	// pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload accepted, in bytes. 0 means
	// pubsub.DefaultMaxDataSize or what the server takes (its
	// max_payload, less room for conveyor's headers), whichever is less;
	// more than the server takes is an error from New.
	MaxDataSize int
	// ConfirmAck makes Ack return once the server confirmed the ack, a
	// round trip per message. By default Ack returns once the ack is sent
	// on the connection, and the server processes it a moment later: if
	// the connection or the server fails in between, the message is
	// delivered again after its lease (at least once, as always).
	//
	// A confirmed ack survives a connection loss and a server restart
	// (SIGTERM, lame duck). It does not survive the server process being
	// killed (SIGKILL, OOM, crash) just after: nats-server 2.9 confirms an
	// ack once applied in memory and writes the consumer's state to disk a
	// moment later, so the message is delivered again; nor a machine crash
	// before the server's fsync (sync_interval). A handler whose effect
	// must happen once needs the inbox (pubsub.Claim). A dead message is
	// never delivered again, killed server or not (docs/natspubsub.md).
	ConfirmAck bool
	// RequestTimeout bounds each request to the server whose ctx has no
	// earlier deadline. 0 means DefaultRequestTimeout. It also sets the
	// ping interval (half of it) and the socket write timeout of the
	// connection Connect makes (ConnectOptions), and how long the server
	// has to answer the PubSub's own ping after two request timeouts in a
	// row before the connection is made to reconnect.
	RequestTimeout time.Duration
	// UniqueWindow is how long a key of EnqueueUnique (and so a message
	// relayed with its ID, see package relay) is remembered from its first
	// enqueue: the duplicate window of the topic's stream, whose server
	// keeps each key for that long. At least 100ms; 0 means
	// DefaultUniqueWindow.
	UniqueWindow time.Duration
	// InboxRetention is how long a claim of the inbox (Claim) is kept:
	// a redelivery later than that claims anew. At least a second; 0
	// means DefaultInboxRetention.
	InboxRetention time.Duration
	// DeadRetention is how long a dead message is kept in the topic's
	// dead-letter stream (its MaxAge): the server deletes older ones. At
	// least a second; 0 means DefaultDeadRetention; a negative value keeps
	// them until re-queued or purged.
	DeadRetention time.Duration
	// Bind leaves the topics' streams and buckets to the operator: the
	// PubSub looks them up and never creates or changes one (it still
	// makes and deletes the consumers of subscriptions); a missing one is
	// an error wrapping ErrNoStream. Provision makes them. The default
	// (false) makes each on first use and keeps its configuration to
	// these Options.
	Bind bool
	// Replicas is how many copies of each stream the server cluster
	// keeps (1 to 5). 0 means 1.
	Replicas int
	// Logger receives what no caller can be given. nil means
	// slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is handed each failure no caller is returned
	// (see pubsub.Failure): a fetch that failed and is retried
	// (pubsub.FetchRetried), a message that went dead (pubsub.Dead: its
	// last attempt failed, it was rejected, or the lease of its last
	// attempt ran out). It runs in a goroutine of its own (see
	// pubsub.Failure for what happens when it is slow); Close waits for
	// it to have had them. nil means they are logged on Logger, as
	// before (deaths not at all).
	OnFailure func(pubsub.Failure)
}

// resolved are Options with their defaults applied and checked against the
// server's limit.
type resolved struct {
	Options
	shared backend.Options
}

// resolve returns o with its defaults applied, or an error naming the first
// bad field. maxPayload is the server's max_payload (0: not known yet).
func (o Options) resolve(maxPayload int) (resolved, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := checkPrefix(o.Prefix); err != nil {
		return resolved{}, err
	}
	switch {
	case o.RequestTimeout < 0:
		return resolved{}, fmt.Errorf("natspubsub: Options.RequestTimeout is %v, want 0 (default) or more", o.RequestTimeout)
	case o.UniqueWindow != 0 && o.UniqueWindow < 100*time.Millisecond:
		return resolved{}, fmt.Errorf("natspubsub: Options.UniqueWindow is %v, want 0 (default: %v) or at least 100ms", o.UniqueWindow, DefaultUniqueWindow)
	case o.InboxRetention != 0 && o.InboxRetention < time.Second:
		return resolved{}, fmt.Errorf("natspubsub: Options.InboxRetention is %v, want 0 (default: %v) or at least 1s", o.InboxRetention, DefaultInboxRetention)
	case o.DeadRetention > 0 && o.DeadRetention < time.Second:
		return resolved{}, fmt.Errorf("natspubsub: Options.DeadRetention is %v, want 0 (default: %v), at least 1s, or negative (kept)", o.DeadRetention, DefaultDeadRetention)
	case o.Replicas < 0 || o.Replicas > 5:
		return resolved{}, fmt.Errorf("natspubsub: Options.Replicas is %d, want 0 (default: 1) to 5", o.Replicas)
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.UniqueWindow == 0 {
		o.UniqueWindow = DefaultUniqueWindow
	}
	if o.InboxRetention == 0 {
		o.InboxRetention = DefaultInboxRetention
	}
	if o.DeadRetention == 0 {
		o.DeadRetention = DefaultDeadRetention
	}
	storeMax := 0
	if maxPayload > 0 {
		storeMax = max(maxPayload-headerRoom, 1)
	}
	shared, err := backend.Options{Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, Logger: o.Logger}.
		Resolve("natspubsub", storeMax, fmt.Sprintf("the server's max_payload %d less %d bytes for headers", maxPayload, headerRoom))
	if err != nil {
		return resolved{}, err
	}
	o.Retry, o.Lease, o.MaxDataSize, o.Logger = shared.Retry, shared.Lease, shared.MaxDataSize, shared.Logger
	return resolved{Options: o, shared: shared}, nil
}

// checkPrefix accepts 1 to 32 ASCII letters, digits, '-' and '_': a prefix
// is part of stream names and subjects, where '.', '*', '>' and white space
// have meanings of their own.
func checkPrefix(p string) error {
	if len(p) > 32 {
		return fmt.Errorf("natspubsub: Options.Prefix %q is %d bytes, want at most 32", p, len(p))
	}
	for _, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("natspubsub: Options.Prefix %q has %q, want ASCII letters, digits, '-' and '_'", p, r)
		}
	}
	return nil
}
