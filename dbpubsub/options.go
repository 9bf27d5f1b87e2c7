package dbpubsub

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Defaults of Options.
const (
	// DefaultTable is the message table's name.
	DefaultTable = migrations.DefaultTable
	// DefaultPollInterval is how often a consumer waiting for messages
	// looks for them when no notification woke it.
	DefaultPollInterval = time.Second
	// DefaultClaimBatch is the most rows claimed in one round trip.
	DefaultClaimBatch = 512
	// DefaultPrefetch is how many rows a claim takes beyond the Dequeue
	// calls waiting, at first.
	DefaultPrefetch = 8
	// DefaultRetention is how long finished rows are kept before pruning.
	DefaultRetention = 24 * time.Hour
	// DefaultDeadRetention is how long dead rows are kept before pruning:
	// longer than finished rows, so that a dead letter can be looked at
	// and re-queued, but not forever.
	DefaultDeadRetention = 30 * 24 * time.Hour
	// DefaultPruneInterval is how often finished rows past the retention
	// are deleted.
	DefaultPruneInterval = time.Minute
	// DefaultStatementTimeout bounds how long a write, once sent, is
	// awaited.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultMaxBatchSize is the most bytes of data one EnqueueBatch
	// carries by default.
	DefaultMaxBatchSize = 256 << 20
	// DefaultCloseTimeout bounds how long Close waits for statements in
	// flight before canceling them.
	DefaultCloseTimeout = 5 * time.Second
)

// Options configures a PubSub. The zero value means the defaults.
type Options struct {
	// Table is the message table, as created by migrations.Migrate with
	// migrations.WithTable (DefaultTable if empty). It is looked up in the
	// connections' search_path.
	Table string
	// Retry decides when a nacked message comes back and when it is dead.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is delivered again. 0 means pubsub.DefaultLease.
	Lease time.Duration
	// MaxDataSize is the largest payload Enqueue accepts, in bytes. 0 means
	// pubsub.DefaultMaxDataSize.
	MaxDataSize int
	// PollInterval is how often a waiting consumer looks for ready messages
	// when no notification arrives (the fallback for LISTEN/NOTIFY). 0
	// means DefaultPollInterval.
	PollInterval time.Duration
	// ClaimBatch bounds the rows claimed and not yet handed out, per topic
	// and PubSub: a claim takes one row per Dequeue call waiting plus
	// Prefetch, up to this. 0 means DefaultClaimBatch.
	ClaimBatch int
	// Prefetch is how many rows a claim takes beyond the Dequeue calls
	// waiting, so that the next calls find a row without a round trip. It
	// is where prefetching starts: while the consumers empty the buffer
	// before a claim returns, it doubles, up to ClaimBatch.
	// Prefetched rows are leased (their lease is renewed if they wait long)
	// and given back when no Dequeue call looks for them for 50 ms, and on
	// Close; a crash leaves them to be rescued when their lease runs out.
	// Prefetching pauses while the consumers are slower than that. 0 means
	// DefaultPrefetch; a negative value turns prefetching off.
	Prefetch int
	// RescueInterval is how often this PubSub hands out again the messages
	// whose lease ran out (those of any process). 0 means Lease/4, between
	// 10 ms and 10 s.
	RescueInterval time.Duration
	// Retention is how long finished (acked) rows are kept. 0 means
	// DefaultRetention.
	Retention time.Duration
	// DeadRetention is how long dead rows are kept after they died (or
	// were rejected), and with them their unique keys. 0 means
	// DefaultDeadRetention; a negative value keeps them until re-queued
	// or purged (admin.DeadLetters).
	DeadRetention time.Duration
	// PruneInterval is how often finished rows past Retention, and dead
	// rows past DeadRetention, are deleted.
	// 0 means DefaultPruneInterval; a negative value turns pruning off in
	// this PubSub.
	PruneInterval time.Duration
	// NoListen turns LISTEN/NOTIFY wake-ups off in this PubSub: waiting
	// consumers only poll. Enqueue still notifies.
	NoListen bool
	// ListenDSN is the DSN of the dedicated connection that LISTENs. If
	// empty, the configuration of the DB's own pgx connections is used
	// (the DB must then be on github.com/jackc/pgx/v5/stdlib). Set it to
	// reach the server directly when the DB goes through a pooler in
	// transaction mode (PgBouncer), where LISTEN does not work.
	ListenDSN string
	// Logger receives the errors that no caller can be given (a claim
	// failing while Dequeue waits, a lost listener connection, rescue and
	// pruning failures). nil means slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is handed each failure no caller is returned
	// (see pubsub.Failure): a claim that failed and is retried
	// (pubsub.FetchRetried), a message that went dead (pubsub.Dead: its
	// last attempt failed, it was rejected, or the lease of its last
	// attempt ran out, found by this PubSub's rescue). It runs in a
	// goroutine of its own (see pubsub.Failure for what happens when it
	// is slow); Close waits for it to have had them. nil means they are
	// logged on Logger, fetches retried as before, deaths not at all.
	OnFailure func(pubsub.Failure)
	// MaxBatchSize is the most bytes of data one EnqueueBatch of several
	// items may carry in all (each item is bounded by MaxDataSize): a
	// batch is one statement, and PostgreSQL refuses a message over 1 GiB
	// only after the client has encoded all of it. Over it, EnqueueBatch
	// returns an error wrapping pubsub.ErrTooLarge and enqueues nothing.
	// 0 means DefaultMaxBatchSize; at most 512 MiB.
	MaxBatchSize int
	// StatementTimeout bounds how long a write (enqueue, settle, lease
	// extension), once sent to the database, runs. A call returns when its
	// ctx ends all the same: before its statement was sent, with ctx's
	// error (nothing changed); after, with ctx's error wrapping
	// ErrOutcomeUnknown, while the statement goes on under this timeout
	// (for the other enqueues that share it; a settle's outcome is recorded
	// on its message). An enqueue in a caller's transaction is canceled
	// with its ctx instead (the transaction is then aborted). A queued ack
	// is written by the PubSub's settlers, under this timeout.
	// It bounds every other statement too (claims,
	// lease renewals, rescue, pruning, look-ups, the listener's pings) and
	// each wait for a pool connection, so that connections that stop
	// answering fail and are replaced instead of stalling a consumer. 0
	// means DefaultStatementTimeout.
	StatementTimeout time.Duration
	// ConfirmAck makes Ack return once the ack is committed, as Nack,
	// Fail and Reject do. Off by default: Ack returns once the ack is
	// queued, and the settlers write the queued acks of all consumers in
	// grouped statements, continuously, so a consumer goes on to its next
	// message without a round trip (as River's completer and Watermill's
	// offsets do). Without ConfirmAck, Ack still reports a second settle
	// (pubsub.ErrSettled) and a closed PubSub at once; an ack whose
	// delivery is in the second half of its lease, or that finds the queue
	// full, waits for its commit, so that a lost lease is reported. A
	// queued ack whose statement failed for another reason than the lease
	// (the connection lost, the server restarting, a deadlock) is tried
	// again on another connection while its lease holds; one that cannot
	// be written then (its lease ran out, the PubSub closed) is logged, and
	// the message is delivered again when its lease runs out: delivery
	// stays at least once, but an acked message may come back if the
	// process dies within a few milliseconds of the Ack, or the server
	// within its WAL writer's delay (the queued acks commit without
	// waiting for the WAL flush). Close and Flush write
	// the queued acks; Stats flushes first. Set ConfirmAck when an Ack must
	// mean "this message will not be delivered again".
	ConfirmAck bool
	// CloseTimeout bounds how long Close waits for statements in flight.
	// 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
}

// maxBytea is the largest value PostgreSQL stores in a bytea column.
const maxBytea = 1<<30 - 1

// maxBatchLimit bounds Options.MaxBatchSize: a batch's data and the
// statement around it stay well below PostgreSQL's 1 GiB message limit.
const maxBatchLimit = 512 << 20

func (o Options) withDefaults() (Options, error) {
	fail := func(field string, v any, want string) (Options, error) {
		return o, fmt.Errorf("dbpubsub: Options.%s is %v, want %s", field, v, want)
	}
	switch {
	case o.PollInterval < 0:
		return fail("PollInterval", o.PollInterval, "0 (default) or more")
	case o.ClaimBatch < 0:
		return fail("ClaimBatch", o.ClaimBatch, "0 (default) or more")
	case o.RescueInterval < 0:
		return fail("RescueInterval", o.RescueInterval, "0 (default) or more")
	case o.Retention < 0:
		return fail("Retention", o.Retention, "0 (default) or more")
	case o.StatementTimeout < 0:
		return fail("StatementTimeout", o.StatementTimeout, "0 (default) or more")
	case o.CloseTimeout < 0:
		return fail("CloseTimeout", o.CloseTimeout, "0 (default) or more")
	case o.MaxBatchSize < 0 || o.MaxBatchSize > maxBatchLimit:
		return fail("MaxBatchSize", o.MaxBatchSize, "0 (default) to 512 MiB, half of PostgreSQL's 1 GiB message limit")
	}
	if o.MaxBatchSize == 0 {
		o.MaxBatchSize = DefaultMaxBatchSize
	}
	shared, err := backend.Options{Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, Logger: o.Logger}.
		Resolve("dbpubsub", maxBytea, "1 GiB, PostgreSQL's bytea limit")
	if err != nil {
		return o, err
	}
	o.Retry, o.Lease, o.MaxDataSize, o.Logger = shared.Retry, shared.Lease, shared.MaxDataSize, shared.Logger
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if err := migrations.ValidateTable(o.Table); err != nil {
		return o, fmt.Errorf("dbpubsub: Options.Table: %w", err)
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ClaimBatch == 0 {
		o.ClaimBatch = DefaultClaimBatch
	}
	switch {
	case o.Prefetch == 0:
		o.Prefetch = DefaultPrefetch
	case o.Prefetch < 0:
		o.Prefetch = 0
	}
	if o.RescueInterval == 0 {
		o.RescueInterval = min(max(o.Lease/4, 10*time.Millisecond), 10*time.Second)
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
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	return o, nil
}
