// Package wrap is for authors of code that wraps a pubsub.PubSub, Topic or
// Message (tracing, metrics, logging: otelconveyor is one) and of layers
// that build messages over a Topic (package event): the hooks they
// implement and the helpers they call. An application needs package pubsub
// only.
//
// # The model
//
// A wrapper exposes what it wraps with an Unwrap method (Unwrap() Topic,
// Unwrap() Message or Unwrap() PubSub), and pubsub.As finds an optional
// ability on the wrapper or, down the chain, on what it wraps. A wrapper
// that implements an ability only to observe it (tracing an EnqueueBatch)
// declares so with Forwarder, and pubsub.As then reports the ability only
// when the value below has it: a wrapper never claims what the backend
// cannot do.
//
// The hooks:
//
//   - EnqueueStarter (called through StartEnqueue): the wrapper's work for
//     an enqueue starts before the caller builds the messages, so that
//     they carry, in the header of the returned ctx (HeaderFrom), what
//     the wrapper put there, such as a trace context;
//   - ContextCarrier: a delivery's handling context (the span of its
//     processing), which a consumer reaches through pubsub.HandlingContext;
//   - RetryReporter (TopicRetryPolicy): the topic's retry policy, to tell
//     a Nack that makes a message dead from one that retries it.
//
// Speed-ups (OwnedEnqueuer, IDAppender) are cheaper forms of a method of
// the contract; FindSpeedup finds one on the value itself, never below a
// wrapper that lacks it, since the wrapper's own method must run.
//
// # Example
//
//	type tracedTopic struct{ pubsub.Topic }
//
//	func (t tracedTopic) Unwrap() pubsub.Topic { return t.Topic }
//
//	// EnqueueBatch traces the wrapped topic's batch: it only forwards.
//	func (t tracedTopic) EnqueueBatch(ctx context.Context, data [][]byte) error {
//		ctx, end := startSpan(ctx, "enqueue batch")
//		err := pubsub.EnqueueBatch(ctx, t.Topic, data)
//		end(err)
//		return err
//	}
//
//	func (tracedTopic) Forwards(ability any) bool {
//		_, ok := ability.(*pubsub.BatchEnqueuer)
//		return ok
//	}
package wrap
