package natspubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Subscriptions are durable consumers of the topic's stream, each getting
// every message stored after it was created, described by a
// logstore.Subscription, whose rules on the default subscription they
// follow. A topic's stream keeps only what some consumer has not acked
// (prune.go), so the default's reserve is a consumer too. A named
// subscription made while the default is a reserve retires the reserve
// when it holds nothing, else notes its Until. DeleteSubscription deletes
// the consumer and the subscription's dead letters; the last consumer of
// a topic is replaced by a reserve.
//
// Processes that share a prefix see each other's subscriptions at once:
// they are the server's. A process looks once per topic whether it has a
// consumer before its first publish; a subscription deleted meanwhile by
// another process as the topic's last leaves a reserve behind, so a
// publish is not lost.

// consumerDesc is what conveyor keeps in a consumer's description.
type consumerDesc = logstore.Subscription[seq, uint64]

// seq is a stream sequence, a position in a topic's stream: a stream ends
// at its last sequence, a record's.
type seq uint64

// IsSet reports whether s is a sequence (a stream's starts at 1).
func (s seq) IsSet() bool { return s > 0 }

// Next is the sequence after s.
func (s seq) Next() seq { return s + 1 }

// Holds reports whether stream sequence r is from s to end, both
// included.
func (s seq) Holds(end seq, r uint64) bool { return uint64(s) <= r && r <= uint64(end) }

// describe is d as a consumer's description.
func describe(d consumerDesc) string {
	b, _ := json.Marshal(d)
	return string(b)
}

// parseDesc reads a consumer's description; ok is false for a consumer
// conveyor did not make.
func parseDesc(s string) (consumerDesc, bool) { return logstore.Parse[consumerDesc]([]byte(s)) }

// lastSeq returns where stream ends now, its last sequence; label names
// whose stream it is in errors.
func (st *topicState) lastSeq(ctx, rctx context.Context, stream jetstream.Stream, label string) func() (seq, error) {
	return func() (seq, error) {
		info, err := st.ps.streamInfo(rctx, stream)
		if err != nil {
			return 0, st.ps.fail(ctx, "looking up the stream of "+label, err)
		}
		return seq(info.State.LastSeq), nil
	}
}

// config is the configuration of a consumer conveyor makes for s.
func (s *subState) config(d consumerDesc) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       consumerName(s.name),
		Description:   describe(d),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.st.ps.opts.Lease,
		MaxDeliver:    -1, // conveyor's retry policy decides when a message is dead
		FilterSubject: s.st.n.subjects,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	}
}

// keep caches the consumer c of s with its description.
func (s *subState) keep(c jetstream.Consumer, d consumerDesc) {
	created := c.CachedInfo().Created // c is not shared yet
	s.mu.Lock()
	s.cons, s.desc, s.created = c, d, created
	s.mu.Unlock()
}

// cached returns the consumer found or made before, if any.
func (s *subState) cached() (jetstream.Consumer, consumerDesc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cons, s.desc
}

// lookup returns the subscription's consumer, nil when it does not exist;
// it creates nothing.
func (s *subState) lookup(ctx context.Context) (jetstream.Consumer, consumerDesc, error) {
	if c, d := s.cached(); c != nil {
		return c, d, nil
	}
	stream, err := s.st.find(ctx)
	if err != nil || stream == nil {
		return nil, consumerDesc{}, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	c, err := stream.Consumer(rctx, consumerName(s.name))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, consumerDesc{}, nil
	}
	if err != nil {
		return nil, consumerDesc{}, s.st.ps.fail(ctx, "looking up "+s.label(), err)
	}
	d, _ := parseDesc(c.CachedInfo().Config.Description)
	s.keep(c, d)
	return c, d, nil
}

// declare makes the subscription one of the topic's, creating its
// consumer, or declaring the default's reserve, and brings the consumer's
// lease to this PubSub's.
//
// retry is the policy a consumer it creates keeps in its description (nil:
// none, the PubSub's); an existing consumer keeps its own.
func (s *subState) declare(ctx context.Context, retry *pubsub.RetryPolicy) (jetstream.Consumer, error) {
	if c, d := s.cached(); c != nil && !d.Reserve {
		return c, nil
	}
	stream, err := s.st.ensure(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	for range 3 { // another process may create or delete it meanwhile
		c, err := stream.Consumer(rctx, consumerName(s.name))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			d := consumerDesc{Sub: s.name, Retry: retry}
			c, err = stream.CreateConsumer(rctx, s.config(d))
			if errors.Is(err, jetstream.ErrConsumerExists) {
				continue
			}
			if err != nil {
				return nil, s.st.ps.fail(ctx, "creating the consumer of "+s.label(), err)
			}
			s.keep(c, d)
			s.st.markPublishable()
			return c, nil
		}
		if err != nil {
			return nil, s.st.ps.fail(ctx, "looking up "+s.label(), err)
		}
		cfg := c.CachedInfo().Config
		d, _ := parseDesc(cfg.Description)
		if d.Sub == "" {
			d.Sub = s.name
		}
		if d, err = d.Declare(retry, s.st.lastSeq(ctx, rctx, stream, s.label())); err != nil {
			return nil, err
		}
		if cfg.AckWait != s.st.ps.opts.Lease || cfg.Description != describe(d) {
			cfg.AckWait, cfg.Description = s.st.ps.opts.Lease, describe(d)
			if c, err = stream.UpdateConsumer(rctx, cfg); err != nil {
				if errors.Is(err, jetstream.ErrConsumerNotFound) {
					continue
				}
				return nil, s.st.ps.fail(ctx, "updating the consumer of "+s.label(), err)
			}
		}
		s.keep(c, d)
		s.st.markPublishable()
		return c, nil
	}
	return nil, fmt.Errorf("declaring %s: its consumer kept changing", s.label())
}

// reserve creates the default subscription's consumer in reserve on
// stream, unless a consumer of that name exists.
func (s *subState) reserve(ctx context.Context, stream jetstream.Stream) error {
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	_, err := stream.CreateConsumer(rctx, s.config(consumerDesc{Sub: s.name, Reserve: true}))
	if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
		return s.st.ps.fail(ctx, "creating the consumer of "+s.label(), err)
	}
	return nil
}

// markPublishable notes that the topic has a consumer.
func (st *topicState) markPublishable() {
	st.mu.Lock()
	st.publishable = true
	st.mu.Unlock()
}

// retireReserve deals with the default's reserve once a named
// subscription exists: deleted when it holds nothing, else told where its
// messages end.
func (st *topicState) retireReserve(ctx context.Context, stream jetstream.Stream) error {
	def := st.sub(pubsub.DefaultSubscription)
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	c, err := stream.Consumer(rctx, consumerName(def.name))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil
	}
	if err != nil {
		return st.ps.fail(ctx, "looking up "+def.label(), err)
	}
	info, err := st.ps.consumerInfo(rctx, c)
	if err != nil {
		return st.ps.fail(ctx, "looking up "+def.label(), err)
	}
	d, _ := parseDesc(info.Config.Description)
	if !d.Reserve {
		return nil
	}
	if info.NumPending == 0 && info.NumAckPending == 0 {
		err := stream.DeleteConsumer(rctx, consumerName(def.name))
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return st.ps.fail(ctx, "retiring the reserve of "+def.label(), err)
		}
		def.forget()
		return nil
	}
	d, noted, err := d.NoteUntil(st.lastSeq(ctx, rctx, stream, def.label()))
	if err != nil || !noted {
		return err
	}
	cfg := info.Config
	cfg.Description = describe(d)
	if _, err := stream.UpdateConsumer(rctx, cfg); err != nil {
		return st.ps.fail(ctx, "updating the reserve of "+def.label(), err)
	}
	def.forget()
	return nil
}

// recheck drops the cached consumer but not its description, so that the
// next call looks the consumer up again while deliveries already under way
// are still judged by the description.
func (s *subState) recheck() {
	s.mu.Lock()
	s.cons = nil
	s.mu.Unlock()
}

// forget drops the cached consumer, so that the next call looks again.
func (s *subState) forget() {
	s.mu.Lock()
	s.cons, s.desc = nil, consumerDesc{}
	s.mu.Unlock()
	s.f.drop()
}

// Subscribe creates subscription sub of topic unless it exists (see
// pubsub.Subscriber). The consumer is the server's: every process with the
// same prefix shares it, with the lease of the last to declare it, and
// the retry policy of its own that the first gave it (cfg.Own), kept in
// its description. It returns the subscription's configuration.
func (ps *store) Subscribe(ctx context.Context, topic, sub string, cfg driver.SubscriptionConfig) (driver.SubscriptionConfig, error) {
	st := ps.topic(topic)
	s := st.sub(sub)
	if _, err := s.declare(ctx, logstore.OwnRetry(cfg)); err != nil {
		return driver.SubscriptionConfig{}, err
	}
	got := s.subConfig()
	if sub == pubsub.DefaultSubscription {
		return got, nil
	}
	stream, err := st.ensure(ctx)
	if err != nil {
		return driver.SubscriptionConfig{}, err
	}
	return got, st.retireReserve(ctx, stream)
}

// subConfig is the subscription's configuration, as its consumer's
// description found or made last says: its own retry policy, or the
// PubSub's.
func (s *subState) subConfig() driver.SubscriptionConfig {
	_, d := s.cached()
	return d.Config(driver.SubscriptionConfig{Retry: s.st.ps.opts.Retry, Lease: s.st.ps.opts.Lease})
}

// Subscriptions lists the subscriptions of topic, sorted by name.
func (ps *store) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	st := ps.topic(topic)
	stream, err := st.find(ctx)
	if err != nil || stream == nil {
		return []string{}, err
	}
	rctx, cancel := ps.request(ctx)
	defer cancel()
	var all []consumerDesc
	list := stream.ListConsumers(rctx)
	for info := range list.Info() {
		if d, ok := parseDesc(info.Config.Description); ok {
			all = append(all, d)
		}
	}
	if err := list.Err(); err != nil {
		return nil, ps.fail(ctx, "listing the consumers", err)
	}
	return logstore.Names(slices.Values(all)), nil
}

// DeleteSubscription removes subscription sub of topic: its consumer, the
// copies it has not settled, and its dead letters. It wraps
// pubsub.ErrNoSubscription when topic has no subscription sub.
func (ps *store) DeleteSubscription(ctx context.Context, topic, sub string) error {
	st := ps.topic(topic)
	s := st.sub(sub)
	none := fmt.Errorf("%w %q", pubsub.ErrNoSubscription, sub)
	stream, err := st.find(ctx)
	if err != nil {
		return err
	}
	if stream == nil {
		return none
	}
	rctx, cancel := ps.request(ctx)
	defer cancel()
	c, err := stream.Consumer(rctx, consumerName(sub))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return none
	}
	if err != nil {
		return ps.fail(ctx, "looking up "+s.label(), err)
	}
	if d, _ := parseDesc(c.CachedInfo().Config.Description); d.Reserve {
		return none
	}
	info, err := ps.streamInfo(rctx, stream)
	if err != nil {
		return ps.fail(ctx, "looking up the stream of "+s.label(), err)
	}
	last := info.State.Consumers <= 1
	def := st.sub(pubsub.DefaultSubscription)
	if last && sub != pubsub.DefaultSubscription {
		if err := def.reserve(ctx, stream); err != nil {
			return err
		}
	}
	if err := stream.DeleteConsumer(rctx, consumerName(sub)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return ps.fail(ctx, "deleting "+s.label(), err)
	}
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
	s.forget()
	if last && sub == pubsub.DefaultSubscription {
		if err := def.reserve(ctx, stream); err != nil {
			return err
		}
	}
	if d, err := st.deadStream(ctx, false); err != nil {
		return err
	} else if d != nil {
		if err := d.Purge(rctx, jetstream.WithPurgeSubject(s.deadSubject())); err != nil {
			return ps.fail(ctx, "purging the dead letters of "+s.label(), err)
		}
	}
	return s.forgetClaims(ctx)
}
