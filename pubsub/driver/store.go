package driver

import (
	"context"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Store is a backend's store: where the messages of every topic are kept.
// The engine calls Open once, before any other method, and Close once,
// last. Its methods are called concurrently.
type Store interface {
	// Open readies the store for the engine and says which fields of
	// Outgoing it honours (Features). env stays valid until Close.
	Open(env Env) (Features, error)
	// Topic returns the store's side of the topic name, which the engine
	// has checked (pubsub.ValidateTopicName). It does no I/O and cannot
	// fail: a store that must create something for a topic does so on
	// the first Publish or Receive.
	Topic(name string) Topic
	// Close releases the store: the calls waiting in Receive or Publish
	// return an error wrapping pubsub.ErrClosed, the goroutines the store
	// started have ended when it returns. The engine calls it once, after
	// it stopped taking calls.
	Close() error
}

// Env is what the engine gives a Store when it opens it.
type Env struct {
	// Defaults is the configuration of a subscription for which none
	// was given: the PubSub's retry policy and lease.
	Defaults SubscriptionConfig
	// Report raises a failure the store found on its own, where no call
	// returns it: a message made dead because the lease of its last
	// attempt ran out (pubsub.Dead, pubsub.LeaseExpired, Err saying
	// ReasonLeaseExpired), a fetch retried in the background
	// (pubsub.FetchRetried). It never blocks; it is never nil.
	Report func(pubsub.Failure)
}

// SubscriptionConfig is how one subscription delivers: its retry policy
// and its lease. Both are set (defaults applied) when the engine passes one.
type SubscriptionConfig struct {
	// Retry decides the engine's Retry or Dead after a failed delivery;
	// a store uses its MaxAttempts (pubsub.RetryPolicy.Exhausted) when a
	// lease runs out: the message is dead rather than handed out again.
	Retry pubsub.RetryPolicy
	// Lease is how long a delivery may stay unsettled before the message
	// is handed out again.
	Lease time.Duration
	// Own says Retry is the subscription's own (pubsub.SubscribeWith):
	// the store keeps it with the subscription. Without, the subscription
	// has none of its own and delivers with each PubSub's (Env.Defaults):
	// the store keeps nothing, and says Own false for it.
	Own bool
}

// Features are the fields of Outgoing a store honours beyond Data; the
// engine refuses an enqueue asking for one the store lacks, with
// pubsub.ErrUnsupported, and never passes it to Publish.
type Features uint32

const (
	// Delay: Outgoing.At is honoured (pubsub.Delayer).
	Delay Features = 1 << iota
	// Unique: Outgoing.Key is honoured (pubsub.UniqueEnqueuer).
	Unique
	// Tx: Outgoing.Tx is honoured; without it an enqueue with
	// pubsub.WithTx fails rather than lose the atomicity asked for.
	Tx
)

// Has reports whether f includes every feature of g.
func (f Features) Has(g Features) bool { return f&g == g }

// Topic is a store's side of one topic.
type Topic interface {
	// Publish adds m to every subscription the topic has now (to the
	// default subscription's copies when it has none), all or none. It
	// reports whether m was added: false, with a nil error, only when
	// m.Key is taken in every subscription. It may block for room until
	// ctx ends, stop is closed (the engine's handle closed: an error
	// wrapping pubsub.ErrClosed) or the store closes.
	Publish(ctx context.Context, stop <-chan struct{}, m Outgoing) (bool, error)
	// Subscription returns the consumer side of subscription name of the
	// topic (pubsub.DefaultSubscription for the default one), which need
	// not exist yet. It does no I/O and cannot fail; its calls fail with
	// pubsub.ErrNoSubscription while a named subscription does not exist.
	Subscription(name string) Subscription
}

// Outgoing is one message to publish, as the engine checked it.
type Outgoing struct {
	// Data is the payload; the store keeps a copy unless Owned.
	Data []byte
	// Owned says the caller hands Data over and never writes it again:
	// the store may keep it instead of a copy.
	Owned bool
	// Header is the message's header, nil if none (valid; shared by
	// every copy of the message, never written).
	Header pubsub.Header
	// At is when it is due; zero (or a time past) means now. Set only
	// when the store has Delay.
	At time.Time
	// Key is its unique key (valid), "" if none. Set only when the store
	// has Unique.
	Key string
	// Tx is the caller's transaction (pubsub.WithTx), nil if none. Set
	// only when the store has Tx; a store given a transaction it cannot
	// use returns an error wrapping pubsub.ErrUnsupported.
	Tx any
}
