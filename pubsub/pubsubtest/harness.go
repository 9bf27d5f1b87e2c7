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
	// OnFailure is the failure hook (pubsub.Failure) to give the backend,
	// as its Options.OnFailure; nil: none. Honoured by a backend that
	// declares Abilities.FailureHook.
	OnFailure func(pubsub.Failure)
}

// Abilities says which optional abilities and behaviours a backend has. It
// is the one place a harness declares them: the suite checks that the
// backend offers exactly the abilities declared (found through wrappers
// with pubsub.As), tests each one declared, and skips, with a note, the
// cases of one not declared (never counting them as passed).
type Abilities struct {
	// Durable: messages survive closing a PubSub and opening a new one on
	// the same store (Reopen).
	Durable bool
	// Shared: two PubSubs on one store (Reopen) compete for the same
	// messages, as separate processes would.
	Shared bool

	Delay bool // Topic: pubsub.Delayer
	Batch bool // Topic: pubsub.BatchEnqueuer
	// Pipelined: Topic: pubsub.PipelinedEnqueuer (a batch sent together,
	// not all or none), on a backend without Batch.
	Pipelined bool
	Unique    bool // Topic: pubsub.UniqueEnqueuer
	// UniqueWindow is 0 when a unique key is kept as long as its message
	// is; else how long after its first enqueue the backend remembers a
	// key, whatever became of its message (natspubsub: the stream's
	// duplicate window). The harness then makes its PubSubs with this
	// window, and the suite checks that a key is refused within it and
	// taken again once it has passed.
	UniqueWindow time.Duration
	DeadLetters  bool // Topic: admin.DeadLetters
	Stats        bool // Topic: admin.Stater
	// OldestReady: Stats.OldestReady says how long the oldest ready
	// message has waited (a backend that does not track it reports 0).
	OldestReady bool
	Inbox       bool // Topic: pubsub.Inbox
	Attempts    bool // Message: pubsub.Attempter
	ExtendLease bool // Message: pubsub.LeaseExtender
	FailReasons bool // Message: pubsub.Failer
	Reject      bool // Message: pubsub.Rejecter

	Subscriptions bool // PubSub: pubsub.Subscriber
	// Quiesce: PubSub: admin.Quiescer, the quiesce gate. Every backend
	// on pubsub/engine has it. Not in AllMessageAbilities: a backend
	// that implements pubsub itself declares it when it has the gate.
	Quiesce bool

	// Inspection (pubsub/inspect.go).
	TopicList bool // PubSub: admin.TopicLister
	Peek      bool // Topic: admin.Peeker (every state, and Message)
	Cancel    bool // Topic: admin.Canceler
	// DeleteDead: Topic: admin.DeadDeleter.
	DeleteDead bool
	Pause      bool // Topic: admin.Pauser
	AckCount   bool // Topic: admin.AckCounter
	// FailureHook: the backend hands Config.OnFailure each message that
	// goes dead (pubsub.Dead), with its cause. Not in
	// AllMessageAbilities: a harness declares it when it passes
	// Config.OnFailure on.
	FailureHook bool
}

// AllMessageAbilities is every optional ability of a PubSub, a Topic and a
// Message, for a backend that has them all; add Durable and Shared as they
// apply.
func AllMessageAbilities() Abilities {
	return Abilities{Delay: true, Batch: true, Unique: true, DeadLetters: true, Stats: true, OldestReady: true, Inbox: true,
		Attempts: true, ExtendLease: true, FailReasons: true, Reject: true, Subscriptions: true, Pause: true,
		TopicList: true, Peek: true, Cancel: true, DeleteDead: true, AckCount: true}
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
	// Abilities lists the optional abilities under test.
	Abilities Abilities
	// Messages is the size of the concurrency case (8 producers and 8
	// consumers). 0 means 10,000.
	Messages int
	// LargestData is the largest payload the backend takes with its
	// default options, when its store allows less than 1 MiB (a NATS
	// server's max_payload, say); 0 means 1 MiB or more. The round trip of
	// a large payload uses the smaller of the two.
	LargestData int
}
