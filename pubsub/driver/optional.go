package driver

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Optional capabilities. The engine asserts each on the object named
// below when it makes a handle, and reports it through pubsub.As only when
// the store has it. What a caller gets without it is said by the pubsub
// helper named in brackets.

// Subscriptions is a Store whose topics have named subscriptions
// (pubsub.Subscriber). Without it, a topic has its default subscription
// only: pubsub.Subscribe of the default name falls back to Topic, other
// names are pubsub.ErrUnsupported.
type Subscriptions interface {
	// Subscribe creates subscription sub of topic unless it exists, with
	// cfg, and returns the configuration the subscription has: cfg when
	// it made it, the one it keeps otherwise (idempotent; an existing one
	// keeps its config). A retry policy of its own (cfg.Own) is kept
	// where the store keeps its subscriptions, so that every process on a
	// shared store sees it; a subscription without one (made without,
	// or by the store on its own: the default one, on first use) has
	// Env.Defaults, Own false. Subscribing to pubsub.DefaultSubscription
	// makes the default one of the topic's. The store uses the
	// subscription's Retry.MaxAttempts when a lease runs out.
	Subscribe(ctx context.Context, topic, sub string, cfg SubscriptionConfig) (SubscriptionConfig, error)
	// Subscriptions lists the subscriptions of topic, sorted; an empty
	// (non-nil) list for a topic never used.
	Subscriptions(ctx context.Context, topic string) ([]string, error)
	// DeleteSubscription deletes sub of topic and its copies; an error
	// wrapping pubsub.ErrNoSubscription when there is none.
	DeleteSubscription(ctx context.Context, topic, sub string) error
}

// TopicLister is a Store that lists its topics (admin.ListTopics).
type TopicLister interface {
	Topics(ctx context.Context) ([]admin.TopicInfo, error)
}

// BatchPublisher is a Topic that publishes many messages all or none, in
// order (pubsub.EnqueueBatch: without it, one Publish per item).
type BatchPublisher interface {
	PublishBatch(ctx context.Context, stop <-chan struct{}, b Batch) error
}

// PipelinePublisher is a Topic that publishes many messages together but
// not all or none (pubsub.PipelinedEnqueuer): every message sent, in
// order, before their acknowledgements are awaited. It returns one error
// per message (nil: published), or an error for the whole batch when none
// can be said to be published (then the engine reports every item).
type PipelinePublisher interface {
	PublishPipelined(ctx context.Context, stop <-chan struct{}, b Batch) ([]error, error)
}

// Batch is the messages of one EnqueueBatch, as the engine checked them:
// one Outgoing per item of Data, with the same Header and Tx.
type Batch struct {
	// Data are the payloads, in order; the store keeps copies.
	Data [][]byte
	// Header is every message's header, nil if none.
	Header pubsub.Header
	// Tx is the caller's transaction, as in Outgoing.
	Tx any
}

// DeadLetters is a Subscription whose dead messages can be listed,
// re-queued and purged (admin.DeadLetters).
type DeadLetters interface {
	ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error)
	// RequeueDead wraps admin.ErrNotFound when id is no dead message,
	// admin.ErrInvalidID too when it cannot be one.
	RequeueDead(ctx context.Context, id string) error
	RequeueAllDead(ctx context.Context) (int, error)
	PurgeDead(ctx context.Context) (int, error)
}

// Stater is a Subscription that counts its messages (admin.TopicStats).
type Stater interface {
	Stats(ctx context.Context) (admin.Stats, error)
}

// Peeker is a Subscription whose messages can be looked at
// (admin.Peek, admin.GetMessage); the engine normalizes the options.
type Peeker interface {
	Peek(ctx context.Context, opts admin.PeekOptions) (admin.PeekPage, error)
	Message(ctx context.Context, id string) (admin.MessageInfo, []byte, error)
}

// Canceler is a Subscription whose waiting messages can be deleted
// (admin.Cancel).
type Canceler interface {
	Cancel(ctx context.Context, id string) error
}

// DeadDeleter is a Subscription whose dead messages can be deleted one
// by one (admin.DeleteDead).
type DeadDeleter interface {
	DeleteDead(ctx context.Context, id string) error
}

// Pauser is a Subscription that can be paused (admin.Pause): Receive
// keeps its messages back until Resume.
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Paused(ctx context.Context) (bool, error)
}

// AckCounter is a Subscription that counts its recent acks
// (admin.AckedSince).
type AckCounter interface {
	AckedSince(ctx context.Context, since time.Time) (int64, error)
}

// Inbox is a Subscription that remembers the keys its consumers claimed
// (pubsub.Claim); the engine checks the key.
type Inbox interface {
	Claim(ctx context.Context, key string) (first bool, release func(context.Context) error, err error)
}

// Releaser is a Subscription that can give a delivery back unsettled,
// due now, without counting its attempt: what the engine does with a
// delivery Receive made as the quiesce gate shut (admin.Quiescer), which
// no consumer saw. Without it the engine calls Retry with no delay, and
// the message has one attempt more.
type Releaser interface {
	Release(ctx context.Context, d *Delivery) error
}

// SlotReceiver is a Subscription that hands out each delivery in a Slot it
// keeps itself (an in-memory store: inside its message's entry), so that a
// delivery costs the engine no allocation. The engine calls ReceiveSlot
// instead of Receive; the Slot must stay the delivery's own (a store
// makes a new one for a redelivery, never reusing one handed out).
type SlotReceiver interface {
	// ReceiveSlot is Receive, the delivery in the returned Slot.
	ReceiveSlot(ctx context.Context, stop <-chan struct{}) (*Slot, error)
}

// Slot is a Delivery with room for the engine's state of it.
type Slot struct {
	Delivery Delivery
	// Owner, State and Hook are the engine's; a store leaves them zero.
	Owner any
	State atomic.Uint32
	Hook  any // what the engine's Observer keeps of the delivery
}
