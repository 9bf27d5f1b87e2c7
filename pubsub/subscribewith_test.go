package pubsub

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// noSubs is a PubSub without subscriptions of its own.
type noSubs struct{}

func (noSubs) Topic(string) Topic { return nil }

func TestSubscribeWithChecks(t *testing.T) {
	ctx := context.Background()
	for field, r := range map[string]RetryPolicy{
		"MaxAttempts": {MaxAttempts: -1}, "MinBackoff": {MinBackoff: -1}, "MaxBackoff": {MaxBackoff: -1}, "Jitter": {Jitter: 1.5},
	} {
		_, err := SubscribeWith(ctx, noSubs{}, "t", "s", SubscriptionOptions{Retry: r})
		if !errors.Is(err, ErrInvalidSubscriptionOptions) || !strings.Contains(err.Error(), "RetryPolicy."+field) {
			t.Errorf("SubscribeWith of a bad %s: %v, want ErrInvalidSubscriptionOptions naming it", field, err)
		}
	}
	if _, err := SubscribeWith(ctx, noSubs{}, "t", "s", SubscriptionOptions{Retry: RetryPolicy{MaxAttempts: 2}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SubscribeWith of a policy without a SubscriberWith: %v, want ErrUnsupported", err)
	}
	if _, err := SubscribeWith(ctx, noSubs{}, "t", "", SubscriptionOptions{}); !errors.Is(err, ErrInvalidSubscription) {
		t.Errorf("SubscribeWith of a bad name: %v, want ErrInvalidSubscription", err)
	}
}
