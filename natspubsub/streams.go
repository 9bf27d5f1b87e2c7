package natspubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// ErrNoStream is wrapped by the errors of a PubSub with Options.Bind when
// a stream or bucket of a topic does not exist: the operator makes them
// (Provision).
var ErrNoStream = errors.New("natspubsub: stream missing")

// A topic's streams and bucket (names.go), as conveyor makes them. By
// default a PubSub makes each on first use and brings its configuration to
// these; with Options.Bind it only looks them up.

func (st *topicState) topicConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        st.n.stream,
		Description: st.name,
		Subjects:    []string{st.n.subjects},
		Retention:   jetstream.LimitsPolicy, // purged below the consumers' ack floor (prune.go)
		Storage:     jetstream.FileStorage,
		Replicas:    st.ps.opts.Replicas,
		Duplicates:  st.ps.opts.UniqueWindow,
	}
}

func (st *topicState) deadConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        st.n.deadStream,
		Description: st.name + " (dead letters)",
		Subjects:    []string{st.n.deadPrefix + "*"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      max(st.ps.opts.DeadRetention, 0), // 0: kept
		Storage:     jetstream.FileStorage,
		Replicas:    st.ps.opts.Replicas,
	}
}

func (st *topicState) scheduleConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        st.n.schedStream,
		Description: st.name + " (delayed messages)",
		Subjects:    []string{st.n.schedule},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    st.ps.opts.Replicas,
	}
}

func (st *topicState) inboxConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      st.n.inbox,
		Description: st.name + " (inbox)",
		History:     1,
		TTL:         st.ps.opts.InboxRetention,
		Storage:     jetstream.FileStorage,
		Replicas:    st.ps.opts.Replicas,
	}
}

// Provision makes (or brings to this PubSub's options) every stream and
// the bucket of topic: the operator's step before processes with
// Options.Bind use it. It needs the server's permission to manage streams,
// which those processes then do without.
func (ps *PubSub) Provision(ctx context.Context, topic string) error {
	if err := pubsub.ValidateTopicName(topic); err != nil {
		return fmt.Errorf("natspubsub: %w", err)
	}
	if ps.s.isClosed() {
		return backend.ClosedError(pkg, topic, pubsub.DefaultSubscription)
	}
	s := ps.s
	st := s.topic(topic)
	rctx, cancel := s.request(ctx)
	defer cancel()
	for _, cfg := range []jetstream.StreamConfig{st.topicConfig(), st.deadConfig(), st.scheduleConfig()} {
		err := retryStoreCreate(rctx, func() error {
			_, err := s.js.CreateOrUpdateStream(rctx, cfg)
			return err
		})
		if err != nil {
			return fmt.Errorf("natspubsub: %w", s.fail(ctx, fmt.Sprintf("provisioning stream %s of %s", cfg.Name, backend.Label(topic, pubsub.DefaultSubscription)), err))
		}
	}
	err := retryStoreCreate(rctx, func() error {
		_, err := s.js.CreateOrUpdateKeyValue(rctx, st.inboxConfig())
		return err
	})
	if err != nil {
		return fmt.Errorf("natspubsub: %w", s.fail(ctx, "provisioning the inbox of "+backend.Label(topic, pubsub.DefaultSubscription), err))
	}
	return nil
}
