package kafkapubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/pubsub"
)

// HasTopic reports whether topic has its log on the cluster under this
// PubSub's Prefix: whether a PubSub made it (by an enqueue, a subscribe,
// a consume or Provision). It makes nothing. Kafka cannot list
// conveyor's topics (their names on the cluster are tokens, names.go), so
// an operator's tool checks a topic with it before acting: every other
// call on a topic makes its Kafka topics when missing (unless
// Options.Bind).
//
// After Close it returns an error wrapping pubsub.ErrClosed.
func (ps *PubSub) HasTopic(ctx context.Context, topic string) (bool, error) {
	if ps.s.ctx.Err() != nil {
		return false, fmt.Errorf("kafkapubsub: looking up the log of topic %q: %w", topic, pubsub.ErrClosed)
	}
	name := topicNames(ps.s.opts.Prefix, topic).log
	found, err := ps.s.describe(ctx, "looking up the log of topic "+topic, name)
	if err != nil {
		return false, err
	}
	_, ok := found[name]
	return ok, nil
}

// describe returns the details of those of the Kafka topics names that
// exist. It asks with a client of its own: a client keeps the metadata it
// was answered for a while, and the PubSub's would then not see a topic
// made just after (by Provision in another process, say).
func (s *store) describe(ctx context.Context, doing string, names ...string) (kadm.TopicDetails, error) {
	cl, err := kgo.NewClient(s.opts.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	rctx, cancel := s.request(ctx)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(rctx, names...)
	if err != nil {
		return nil, s.fail(ctx, doing, err)
	}
	found := kadm.TopicDetails{}
	for _, name := range names {
		d, ok := td[name]
		switch {
		case !ok, errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		case d.Err != nil:
			return nil, s.fail(ctx, doing, d.Err)
		default:
			found[name] = d
		}
	}
	return found, nil
}
