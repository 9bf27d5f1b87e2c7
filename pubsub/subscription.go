package pubsub

import (
	"context"
	"fmt"
)

// DefaultSubscription names a topic's default subscription: the one that
// PubSub.Topic(name).Dequeue reads.
const DefaultSubscription = "default"

// Subscriber is a PubSub whose topics have named subscriptions (see the
// package documentation, "Subscriptions").
type Subscriber interface {
	// Subscribe creates subscription sub of topic if it does not exist
	// (idempotent; durable on a durable backend) and returns a handle on
	// it: its Dequeue reads sub's copies, its enqueues publish to topic
	// (every subscription gets a copy), and its dead letters and stats
	// are sub's. Subscribe(ctx, topic, DefaultSubscription) is the
	// default subscription, the one Topic(topic) reads.
	Subscribe(ctx context.Context, topic, sub string) (Topic, error)
	// Subscriptions lists the subscriptions of topic, sorted by name; the
	// default one is listed once it was consumed from or declared.
	Subscriptions(ctx context.Context, topic string) ([]string, error)
	// DeleteSubscription removes sub of topic and the copies it has not
	// settled (pending, scheduled, processing and dead); other
	// subscriptions are untouched. It wraps ErrNoSubscription when topic
	// has no subscription sub. The Dequeue calls of a deleted named
	// subscription's handles, in any process, those waiting then and
	// later ones, wrap ErrNoSubscription until it is created again (a
	// waiting one in another process after up to the backend's poll
	// interval); the default subscription's handles read a new default.
	DeleteSubscription(ctx context.Context, topic, sub string) error
}

// ValidateSubscriptionName reports whether name can name a subscription:
// the rules of ValidateTopicName. The error wraps ErrInvalidSubscription.
func ValidateSubscriptionName(name string) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("%w %q: %s", ErrInvalidSubscription, name, err)
	}
	return nil
}

// Subscribe creates (idempotently) subscription sub of topic on ps and
// returns a handle on it (see Subscriber). Without a Subscriber, the
// default subscription is ps.Topic(topic) and any other name returns
// ErrUnsupported. A bad topic name wraps ErrInvalidTopic, a bad
// subscription name ErrInvalidSubscription.
func Subscribe(ctx context.Context, ps PubSub, topic, sub string) (Topic, error) {
	if err := ValidateSubscription(topic, sub); err != nil {
		return nil, err
	}
	if s, ok := As[Subscriber](ps); ok {
		return s.Subscribe(ctx, topic, sub)
	}
	if sub == DefaultSubscription {
		return ps.Topic(topic), nil
	}
	return nil, unsupported(ps, "subscriptions")
}

// ValidateSubscription checks a topic name (ValidateTopicName) and the
// name of one of its subscriptions (ValidateSubscriptionName, the error
// naming the topic too).
func ValidateSubscription(topic, sub string) error {
	if err := ValidateTopicName(topic); err != nil {
		return err
	}
	if err := ValidateSubscriptionName(sub); err != nil {
		return fmt.Errorf("%w (of topic %q)", err, topic)
	}
	return nil
}
