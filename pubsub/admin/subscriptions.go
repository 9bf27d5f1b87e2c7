package admin

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub"
)

// ListSubscriptions lists the subscriptions of topic on ps, sorted by
// name. Without a pubsub.Subscriber it returns pubsub.ErrUnsupported.
func ListSubscriptions(ctx context.Context, ps pubsub.PubSub, topic string) ([]string, error) {
	if err := pubsub.ValidateTopicName(topic); err != nil {
		return nil, err
	}
	s, ok := pubsub.As[pubsub.Subscriber](ps)
	if !ok {
		return nil, unsupported(ps, "subscriptions")
	}
	return s.Subscriptions(ctx, topic)
}

// DeleteSubscription removes subscription sub of topic on ps and its pending
// copies (see pubsub.Subscriber). Without a pubsub.Subscriber it returns
// pubsub.ErrUnsupported.
func DeleteSubscription(ctx context.Context, ps pubsub.PubSub, topic, sub string) error {
	if err := pubsub.ValidateSubscription(topic, sub); err != nil {
		return err
	}
	s, ok := pubsub.As[pubsub.Subscriber](ps)
	if !ok {
		return unsupported(ps, "subscriptions")
	}
	return s.DeleteSubscription(ctx, topic, sub)
}
