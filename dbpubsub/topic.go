package dbpubsub

import (
	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// Topic is a handle on one subscription of a topic of a PubSub (Topic(name):
// the default one): its enqueues publish to the topic, its Dequeue, dead
// letters and stats are the subscription's. Besides pubsub.Topic it has
// every optional ability of package pubsub, each the engine's over this
// package's store; every enqueue runs in the caller's transaction when ctx
// carries one (WithTx).
//
// An enqueue returns when its rows are committed (or, in a caller's
// transaction, written in it); concurrent enqueues on one handle share
// statements. One whose ctx ends after its statement was sent returns
// then, in doubt (ErrOutcomeUnknown): retry it idempotently
// (EnqueueUnique, or a consumer that claims). EnqueueAt's time is the
// database's clock; EnqueueBatch is one statement, all or none;
// EnqueueUnique adds nothing while the topic keeps a message under its
// key, until it is pruned (Options.Retention). Ack returns once queued
// for the next grouped statement (see Options.ConfirmAck and
// PubSub.Flush).
type Topic struct {
	handle
	name, sub string
}

// handle is what the engine's handle on a dbpubsub store has: every
// optional ability, the speed-ups and the instrumentation hook (a method
// left out here is hidden from the callers of a *Topic).
type handle interface {
	backend.Topic
	wrap.OwnedEnqueuer
	wrap.EnqueueStarter
	wrap.Forwarder
	admin.Peeker
	admin.Canceler
	admin.DeadDeleter
	admin.Pauser
	admin.AckCounter
	pubsub.Inbox
}

var _ handle = (*Topic)(nil)

// newTopic wraps h, the engine's handle on subscription sub of topic
// name, or returns h when it is not one (a name the engine rejected).
func newTopic(h pubsub.Topic, name, sub string) pubsub.Topic {
	eh, ok := h.(handle)
	if !ok {
		return h
	}
	return &Topic{handle: eh, name: name, sub: sub}
}

// Name returns the topic's name.
func (t *Topic) Name() string { return t.name }

// Subscription returns the name of the subscription the handle reads.
func (t *Topic) Subscription() string { return t.sub }
