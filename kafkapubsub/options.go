package kafkapubsub

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// ErrInvalidConfig is wrapped by the error of New and Register for an
// option that makes no sense, by that of a call on a subscription made
// with another Options.ConsumerGroups, and by Provision's for a Kafka
// topic that exists with another partition count or replication factor
// than the Options ask for.
var ErrInvalidConfig = errors.New("kafkapubsub: invalid configuration")

// Defaults of Options.
const (
	// DefaultPrefix starts the names of a PubSub's Kafka topics and
	// groups.
	DefaultPrefix = "conveyor"
	// DefaultRequestTimeout bounds each request to the cluster whose ctx
	// has no earlier deadline.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultPartitions is the partition count of a topic conveyor
	// creates: one keeps a subscription's order (FIFO).
	DefaultPartitions = 1
	// DefaultDeliveryLimit is Kafka's default share-group delivery count
	// limit (group.share.delivery.count.limit): the broker archives a
	// record released this often.
	DefaultDeliveryLimit = 5
	// DefaultRecordLock is Kafka's default share-group record lock
	// (group.share.record.lock.duration.ms).
	DefaultRecordLock = 30 * time.Second
	// DefaultSessionTimeout is the session timeout of a consumer group's
	// member, franz-go's and Kafka's consumers' default.
	DefaultSessionTimeout = 45 * time.Second
	// headerRoom is the part of a record kept for the headers conveyor
	// adds (its ID, and a dead message's attempts and last error); a
	// caller's pubsub.Header counts toward Options.MaxDataSize.
	headerRoom = 8 << 10
)

// Options configures a PubSub. The zero value means the defaults, with
// the brokers of $KAFKA_BROKERS.
type Options struct {
	// Brokers are the seed brokers, host:port. Empty means
	// $KAFKA_BROKERS, a comma-separated list.
	Brokers []string
	// Prefix starts the names of the PubSub's Kafka topics and share
	// groups: PubSubs with the same Prefix on one cluster share their
	// topics. 1 to 32 ASCII letters, digits, '-' or '_'. "" means
	// DefaultPrefix.
	Prefix string
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload accepted, in bytes, header
	// included. 0 means pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// RequestTimeout bounds each request to the cluster whose ctx has no
	// earlier deadline. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Partitions is the partition count of the log of a topic, and of a
	// subscription's own log, that conveyor creates (on first use, or by
	// Provision). 0 means DefaultPartitions.
	Partitions int32
	// Replication is the replication factor of a Kafka topic conveyor
	// creates. 0 means the cluster's default.
	Replication int16
	// Bind leaves the Kafka topics to the operator: the PubSub creates
	// none and changes the configuration of none; it looks up those it
	// needs, and a missing one is an error wrapping ErrNoTopic that names
	// it. Provision makes them: a topic's, and each subscription's own
	// log and dead log, which a subscription needs from its start; so a
	// subscription is made by Provision and only declared by a bound
	// PubSub's Subscribe, which fixes its retry policy (provision.go).
	// The default (false) makes each on first use.
	Bind bool
	// DeliveryLimit is the cluster's share-group delivery count limit:
	// a message whose delivery count reaches it is appended again to its
	// subscription's retry log rather than released, which would archive
	// it. 0 means DefaultDeliveryLimit.
	DeliveryLimit int
	// RecordLock is the cluster's share-group record lock: a delivery
	// held longer (a long lease, an extension, a retry's backoff) renews
	// it every third of it. 0 means DefaultRecordLock.
	RecordLock time.Duration
	// ConfirmAck makes Ack in share-group mode return once the cluster
	// answered the acknowledgement, as Nack and dead do. Off by default:
	// Ack returns once the acknowledgement is queued in the member that
	// fetched the record, which sends it with its next fetch or within a
	// second, so a consumer goes on to its next message without a round
	// trip. An acknowledgement the cluster refuses (the record's lock ran
	// out, a broker restarted) is logged, and the record is delivered
	// again: delivery stays at least once, but an acked message may come
	// back if the process dies within that second. Close sends the queued
	// acknowledgements. In consumer-group mode Ack returns once settled in
	// memory (the package's doc) whatever ConfirmAck says.
	ConfirmAck bool
	// ConsumerGroups makes each subscription a Kafka consumer group
	// rather than a share group (KIP-932), for clusters without share
	// groups: consumer-group mode (group.go; its differences are in the
	// package's doc). DeliveryLimit and RecordLock do not apply to it.
	// A subscription made in one mode is refused to a PubSub of the
	// other (ErrInvalidConfig).
	ConsumerGroups bool
	// SessionTimeout is how long the cluster waits for a process that
	// stopped without leaving its consumer groups (killed, or cut off)
	// before their partitions go to the other processes: in
	// consumer-group mode those of a subscription, and in both modes
	// that of a topic's delayed messages (delay.go). The cluster bounds
	// it (group.min.session.timeout.ms, 6 s by default on Kafka). 0
	// means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// OnFailure hears of each failure nobody returns (pubsub.Failure).
	OnFailure func(pubsub.Failure)
	// Logger receives what no caller can be given. nil means
	// slog.Default().
	Logger *slog.Logger
}

// resolved is Options with its defaults applied.
type resolved struct {
	Options
}

// resolve applies the defaults, or returns an error wrapping
// ErrInvalidConfig naming the field that makes no sense.
func (o Options) resolve() (resolved, error) {
	shared, err := backend.Options{Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, Logger: o.Logger}.Resolve(pkg, 0, "")
	if err != nil {
		return resolved{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	o.Retry, o.Lease, o.MaxDataSize, o.Logger = shared.Retry, shared.Lease, shared.MaxDataSize, shared.Logger
	bad := func(format string, args ...any) (resolved, error) {
		return resolved{}, fmt.Errorf("%w: Options."+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if len(o.Brokers) == 0 {
		if env := os.Getenv("KAFKA_BROKERS"); env != "" {
			if o.Brokers, err = ParseBrokers(env); err != nil {
				return resolved{}, fmt.Errorf("$KAFKA_BROKERS: %w", err)
			}
		}
	}
	switch {
	case len(o.Brokers) == 0:
		return bad("Brokers is empty and $KAFKA_BROKERS is not set")
	case o.RequestTimeout < 0:
		return bad("RequestTimeout is %v, want 0 (default) or more", o.RequestTimeout)
	case o.Partitions < 0:
		return bad("Partitions is %d, want 0 (default) or more", o.Partitions)
	case o.Replication < 0:
		return bad("Replication is %d, want 0 (default) or more", o.Replication)
	case o.DeliveryLimit < 0 || o.DeliveryLimit == 1:
		return bad("DeliveryLimit is %d, want 0 (default) or 2 or more", o.DeliveryLimit)
	case o.RecordLock < 0:
		return bad("RecordLock is %v, want 0 (default) or more", o.RecordLock)
	case o.SessionTimeout < 0:
		return bad("SessionTimeout is %v, want 0 (default) or more", o.SessionTimeout)
	case !validPrefix(o.Prefix):
		return bad("Prefix is %q, want 1 to 32 ASCII letters, digits, '-' or '_'", o.Prefix)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.DeliveryLimit == 0 {
		o.DeliveryLimit = DefaultDeliveryLimit
	}
	if o.RecordLock == 0 {
		o.RecordLock = DefaultRecordLock
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	return resolved{o}, nil
}

// validPrefix reports whether p is "" or a prefix Options.Prefix takes.
func validPrefix(p string) bool {
	if len(p) > 32 {
		return false
	}
	return strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}
