package kafkapubsub

import (
	"context"
	"fmt"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// pkg starts every error of the package.
const pkg = "kafkapubsub"

// PubSub is the Kafka backend: conveyor's engine over a store whose
// topics are Kafka topics and whose subscriptions are share groups on
// them (consumer groups with Options.ConsumerGroups), shared by every process that uses the same cluster and
// Options.Prefix. Make it with New; it is safe for concurrent use.
//
// Besides pubsub.Topic a handle has admin.DeadLetters and
// admin.DeadDeleter; the PubSub is a pubsub.Subscriber. Close stops the PubSub: every handle and delivery
// returns pubsub.ErrClosed from then on, blocked calls return, and the
// records its share-group members hold go back to the cluster.
type PubSub struct {
	*engine.PubSub
	s *store
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
)

// New returns a PubSub on the cluster of opts.Brokers (or
// $KAFKA_BROKERS). A bad option is an error wrapping ErrInvalidConfig,
// naming it; New does not wait for the cluster.
func New(opts Options) (*PubSub, error) {
	return newPubSub(opts, nil)
}

func newPubSub(opts Options, observe func(*engine.PubSub) engine.Observer) (*PubSub, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s, err := newStore(o)
	if err != nil {
		return nil, err
	}
	e, err := engine.New(s, engine.Options{
		Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, OnFailure: o.OnFailure, Observe: observe,
	})
	if err != nil {
		s.cl.Close()
		return nil, err
	}
	return &PubSub{PubSub: e, s: s}, nil
}

// Shutdown is Close; it returns by the time ctx ends even if the cluster
// does not answer.
func (ps *PubSub) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- ps.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kafkapubsub: shutdown: %w", ctx.Err())
	}
}

// LogTopic returns the name of the Kafka topic that holds the messages of
// topic name: where another Kafka client (kcat, a Kafka Connect sink)
// reads what Enqueue published, or produces records the subscriptions
// of name consume. A message's identity (pubsub.HeaderMessageID) is the
// record header of that name; conveyor's own headers start with
// "Conveyor-", and header key k of a message is "Conveyor-H-"+k.
func (ps *PubSub) LogTopic(name string) string { return topicNames(ps.s.opts.Prefix, name).log }

// MaxDataSize is the largest payload Enqueue takes, in bytes.
func (ps *PubSub) MaxDataSize() int { return ps.s.opts.MaxDataSize }
