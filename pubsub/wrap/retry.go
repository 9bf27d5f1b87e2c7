package wrap

import "github.com/conveyorgo/conveyor/pubsub"

// RetryReporter is a Topic that says its retry policy: a wrapper uses it
// to tell a Nack that makes a message dead (its last attempt) from one
// that retries it.
type RetryReporter interface {
	RetryPolicy() pubsub.RetryPolicy
}

// TopicRetryPolicy returns t's retry policy, with its defaults filled in,
// and whether t says it (RetryReporter).
func TopicRetryPolicy(t pubsub.Topic) (pubsub.RetryPolicy, bool) {
	if r, ok := pubsub.As[RetryReporter](t); ok {
		return r.RetryPolicy().WithDefaults(), true
	}
	return pubsub.RetryPolicy{}.WithDefaults(), false
}
