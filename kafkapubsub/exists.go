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
// PubSub's Prefix: whether a PubSub made it (by an enqueue, a subscribe
// or a consume). It makes nothing. Kafka cannot list conveyor's topics
// (their names on the cluster are tokens, names.go), so an operator's tool
// checks a topic with it before acting: every other call on a topic makes
// its Kafka topics when missing. It asks with a client of its own: a
// client keeps the metadata it was answered for a while, and the PubSub's
// would then not see the topic made just after. After Close it returns an
// error wrapping pubsub.ErrClosed.
func (ps *PubSub) HasTopic(ctx context.Context, topic string) (bool, error) {
	s := ps.s
	if s.ctx.Err() != nil {
		return false, fmt.Errorf("kafkapubsub: looking up the log of topic %q: %w", topic, pubsub.ErrClosed)
	}
	name := topicNames(s.opts.Prefix, topic).log
	cl, err := kgo.NewClient(s.opts.clientOpts()...)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	rctx, cancel := s.request(ctx)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(rctx, name)
	if err == nil {
		err = td[name].Err
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return false, nil
	case err != nil:
		return false, s.fail(ctx, "looking up the log of topic "+topic, err)
	}
	_, ok := td[name]
	return ok, nil
}
