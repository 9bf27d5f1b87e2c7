package engine

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// SubscribeWith creates subscription sub of topic unless it exists, with
// opts over the PubSub's defaults, and returns a handle on it with the
// retry policy the store keeps for it (see pubsub.SubscriberWith). When
// opts asks for a retry policy and the subscription exists with another,
// it is left as it is and the error wraps pubsub.ErrSubscriptionConflict.
func (ps *PubSub) SubscribeWith(ctx context.Context, topic, sub string, opts pubsub.SubscriptionOptions) (pubsub.Topic, error) {
	if err := ps.checkSubscription(ctx, topic, sub); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("%s: subscribe on %s: %w", ps.name, backend.Label(topic, sub), err)
	}
	asked := opts.Retry != (pubsub.RetryPolicy{})
	if ps.subs == nil {
		if sub == pubsub.DefaultSubscription && !asked {
			return ps.Topic(topic), nil
		}
		if asked {
			return nil, ps.unsupported("per-subscription configuration")
		}
		return nil, ps.unsupported("subscriptions")
	}
	cfg := ps.defaults
	if asked {
		cfg.Retry, cfg.Own = opts.Retry.WithDefaults(), true
	}
	got, err := ps.subs.Subscribe(ctx, topic, sub, cfg)
	if err != nil {
		return nil, ps.wrap(ctx, "subscribe on "+backend.Label(topic, sub), err)
	}
	got.Retry = got.Retry.WithDefaults()
	if asked && got.Retry != cfg.Retry {
		return nil, fmt.Errorf("%s: subscribe on %s with retry policy %+v: it has %+v: %w",
			ps.name, backend.Label(topic, sub), cfg.Retry, got.Retry, pubsub.ErrSubscriptionConflict)
	}
	h := ps.newHandle(topic, sub)
	handleOf(h).policy.Store(&got.Retry)
	return h, nil
}

// handleOf returns the engine's topic inside h, a handle newHandle made.
func handleOf(h pubsub.Topic) *topic {
	if n, ok := h.(*namedTopic); ok {
		return &n.topic
	}
	return h.(*topic)
}

// retryPolicy returns the retry policy of the handle's subscription: the
// one the store keeps for it, asked for once (with the store's idempotent
// Subscribe, which makes the default subscription if a handle of
// Topic(name) is the first to use it), then kept. A store without
// driver.Subscriptions has the PubSub's policy on its one subscription.
func (t *topic) retryPolicy(ctx context.Context) (pubsub.RetryPolicy, error) {
	if p := t.policy.Load(); p != nil {
		return *p, nil
	}
	if t.ps.subs == nil {
		return t.ps.defaults.Retry, nil
	}
	got, err := t.ps.subs.Subscribe(ctx, t.name, t.sub, t.ps.defaults)
	if err != nil {
		return pubsub.RetryPolicy{}, err
	}
	p := got.Retry.WithDefaults()
	t.policy.Store(&p)
	return p, nil
}
