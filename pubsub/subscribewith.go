package pubsub

import (
	"context"
	"errors"
	"fmt"
)

// Errors of per-subscription configuration (SubscribeWith).
var (
	// ErrInvalidSubscriptionOptions is wrapped by SubscribeWith's error
	// for options that make no sense; the error names the field.
	ErrInvalidSubscriptionOptions = errors.New("pubsub: invalid subscription options")
	// ErrSubscriptionConflict is wrapped by SubscribeWith's error when the
	// subscription exists with another policy than the options ask for:
	// it is left as it is. Delete it and subscribe again to change it.
	ErrSubscriptionConflict = errors.New("pubsub: subscription exists with another configuration")
)

// SubscriptionOptions is the configuration of one subscription, kept with
// it by the store (durable on a durable backend: every process sees it).
// A zero field is not asked for: a subscription SubscribeWith creates
// takes the PubSub's for it, and one that exists keeps its own. The lease
// stays the PubSub's on every subscription.
type SubscriptionOptions struct {
	// Retry is the subscription's retry policy: how many deliveries a
	// message gets (MaxAttempts, as go-messaging's MaxDeliver) and the
	// backoff between them. Its zero fields are RetryPolicy's defaults;
	// the zero RetryPolicy as a whole means the PubSub's policy.
	Retry RetryPolicy
}

// Validate reports the first field of o that makes no sense, by name; the
// error wraps ErrInvalidSubscriptionOptions.
func (o SubscriptionOptions) Validate() error {
	if err := o.Retry.Validate(); err != nil {
		return fmt.Errorf("%w: Retry: %w", ErrInvalidSubscriptionOptions, err)
	}
	return nil
}

// SubscriberWith is a PubSub whose subscriptions have a configuration of
// their own (SubscribeWith).
type SubscriberWith interface {
	// SubscribeWith is Subscriber.Subscribe with opts: a subscription it
	// creates keeps opts (its zero fields the PubSub's); one that exists
	// with another policy than opts asks for is left as it is, and the
	// error wraps ErrSubscriptionConflict. Subscribe, or SubscribeWith of
	// zero options, opens a subscription with the configuration it has.
	SubscribeWith(ctx context.Context, topic, sub string, opts SubscriptionOptions) (Topic, error)
}

// SubscribeWith creates (idempotently) subscription sub of topic on ps with
// its own retry policy (see SubscriberWith) and returns a handle
// on it. Zero options are Subscribe. A bad field wraps
// ErrInvalidSubscriptionOptions; without a SubscriberWith, non-zero
// options return ErrUnsupported.
func SubscribeWith(ctx context.Context, ps PubSub, topic, sub string, opts SubscriptionOptions) (Topic, error) {
	if err := ValidateSubscription(topic, sub); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if s, ok := As[SubscriberWith](ps); ok {
		return s.SubscribeWith(ctx, topic, sub, opts)
	}
	if opts == (SubscriptionOptions{}) {
		return Subscribe(ctx, ps, topic, sub)
	}
	return nil, unsupported(ps, "per-subscription configuration")
}
