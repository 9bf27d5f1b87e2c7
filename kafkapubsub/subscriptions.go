package kafkapubsub

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// A topic's subscriptions are kept in its registry, a compacted log keyed
// by the subscription's name (names.go), read whole by the calls that
// need it: every process with the same prefix sees the same ones. Each
// subscription is a share group that starts at the end of the topic's log
// as it was when the subscription was made, so it gets what is
// published after, and follows the log layer's rules on the default
// subscription (logstore.Subscription), but for two:
//
//   - With Options.Bind, a deleted last subscription leaves no reserve
//     (a reserve's Kafka topics are the operator's to make): a publish is
//     then ErrNoTopic.
//   - Provision makes reserves of named subscriptions too, declared
//     by a Subscribe (provision.go).
//
// The registry's writes of one process are serialized; two processes
// making one subscription at once may both make a generation, and the
// last written wins: the other's members read a group nobody lists.

var _ driver.Subscriptions = (*store)(nil)

// subDesc is a subscription as its registry keeps it.
type subDesc struct {
	logstore.Subscription[offsets, *kgo.Record]
	// Gen is the generation in its names (names.go).
	Gen string `json:"gen"`
	// Created is when it was made, in nanoseconds since the Unix epoch,
	// by its maker's clock: a message delayed before is not its own.
	Created int64 `json:"created,omitempty"`
	// Groups: it was made in consumer-group mode (Options.ConsumerGroups),
	// a consumer group; else a share group.
	Groups bool `json:"consumer_groups,omitempty"`
}

// offsets are offsets of the partitions of a topic's log; as where the
// log ends, each is the offset its partition's next record gets.
type offsets map[int32]int64

// IsSet reports whether o are offsets (nil: none).
func (o offsets) IsSet() bool { return o != nil }

// Next is o: an end offset is the next record's.
func (o offsets) Next() offsets { return o }

// Holds reports whether record r of the log is from o to end, end
// excluded.
func (o offsets) Holds(end offsets, r *kgo.Record) bool {
	from, ok := o[r.Partition]
	return ok && r.Offset >= from && r.Offset < end[r.Partition]
}

// sameMode returns nil when d was made in the store's mode, else an error
// wrapping ErrInvalidConfig: a share group cannot be read as a consumer
// group, nor the other way round.
func (s *store) sameMode(d subDesc) error {
	if d.Groups == s.opts.ConsumerGroups {
		return nil
	}
	mode := map[bool]string{false: "share-group", true: "consumer-group"}
	return fmt.Errorf("%w: subscription %q was made in %s mode; this PubSub's Options.ConsumerGroups is %v",
		ErrInvalidConfig, d.Sub, mode[d.Groups], s.opts.ConsumerGroups)
}

// registry reads the topic's subscriptions.
func (st *topicState) registry(ctx context.Context) (registry, error) {
	recs, err := st.s.readLog(ctx, st.n.registry, "reading the subscriptions of "+st.name)
	if err != nil {
		return nil, err
	}
	return registryOf(recs), nil
}

// registry is a topic's subscriptions by name.
type registry map[string]subDesc

// registryOf returns the subscriptions the records of a registry keep.
func registryOf(recs []*kgo.Record) registry {
	reg := registry{}
	for _, r := range recs {
		if r.Value == nil {
			delete(reg, string(r.Key))
			continue
		}
		if d, ok := logstore.Parse[subDesc](r.Value); ok && d.Sub == string(r.Key) {
			reg[d.Sub] = d
		}
	}
	return reg
}

// write keeps d in the registry.
func (st *topicState) write(ctx context.Context, d subDesc) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return st.s.produce(ctx, &kgo.Record{Topic: st.n.registry, Key: []byte(d.Sub), Value: b, Headers: st.nameHeader()})
}

// drop removes sub from the registry.
func (st *topicState) drop(ctx context.Context, sub string) error {
	return st.s.produce(ctx, &kgo.Record{Topic: st.n.registry, Key: []byte(sub), Headers: st.nameHeader()})
}

// create makes a new generation of subscription sub: its own log, its
// dead log and its share group (or consumer group), which starts at the
// log's end; reserve and retry as given. It does not write the registry.
func (st *topicState) create(ctx context.Context, sub string, reserve bool, retry *pubsub.RetryPolicy) (subDesc, error) {
	d := subDesc{Gen: newID()[:8], Created: time.Now().UnixNano(), Groups: st.s.opts.ConsumerGroups}
	d.Sub, d.Reserve, d.Retry = sub, reserve, retry
	n := st.n.sub(sub, d.Gen)
	s := st.s
	for _, k := range st.subTopics(sub, d.Gen) {
		if _, err := s.createTopic(ctx, k); err != nil {
			return d, err
		}
	}
	ends, err := s.endOffsets(ctx, st.n.log)
	if err != nil {
		return d, err
	}
	var o kadm.Offsets
	for p, at := range ends {
		o.Add(kadm.Offset{Topic: st.n.log, Partition: p, At: at})
	}
	for p := range s.opts.Partitions {
		o.Add(kadm.Offset{Topic: n.retry, Partition: p, At: 0})
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	if s.opts.ConsumerGroups {
		// A consumer group starts where its offsets were committed, by
		// nobody yet (a simple commit of an empty group).
		resp, err := s.adm.CommitOffsets(rctx, n.cgroup, o)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return d, s.fail(ctx, "starting consumer group "+n.cgroup, err)
		}
		return d, nil
	}
	// A requeue's transaction that lost (dead.go) is aborted: the group
	// must not read it.
	if err := s.setGroupConfig(ctx, n.group, "share.isolation.level", "read_committed"); err != nil {
		return d, err
	}
	resp, err := s.adm.AlterShareGroupOffsets(rctx, n.group, o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return d, s.fail(ctx, "starting share group "+n.group, err)
	}
	return d, nil
}

// Subscribe creates subscription sub of topic unless it exists, with
// cfg's retry policy when it is its own, and returns the subscription's
// configuration. With Options.Bind it only declares one Provision made.
func (s *store) Subscribe(ctx context.Context, topic, sub string, cfg driver.SubscriptionConfig) (driver.SubscriptionConfig, error) {
	st := s.topic(topic)
	if err := st.ensure(ctx); err != nil {
		return driver.SubscriptionConfig{}, err
	}
	d, err := st.subscribe(ctx, sub, logstore.OwnRetry(cfg), false)
	if err != nil {
		return driver.SubscriptionConfig{}, err
	}
	return d.Config(s.env.Defaults), nil
}

// subscribe makes subscription sub of the topic, whose Kafka topics
// exist, unless it exists, and declares it with retry policy own when it
// is a reserve. With provision (Provision) it makes it a reserve instead,
// and leaves one that exists as it is but for its Kafka topics, made
// again when missing; with Options.Bind and without provision it makes
// none: a subscription not in the registry is ErrNoTopic.
func (st *topicState) subscribe(ctx context.Context, sub string, own *pubsub.RetryPolicy, provision bool) (subDesc, error) {
	s := st.s
	st.regMu.Lock()
	defer st.regMu.Unlock()
	reg, err := st.registry(ctx)
	if err != nil {
		return subDesc{}, err
	}
	d, ok := reg[sub]
	if ok {
		if err := s.sameMode(d); err != nil {
			return subDesc{}, err
		}
		if provision {
			if err := s.makeTopics(ctx, subLabel(st.name, sub), st.subTopics(sub, d.Gen)); err != nil {
				return subDesc{}, err
			}
		} else if err := st.sub(sub).bound(ctx, d); err != nil {
			return subDesc{}, err
		}
	}
	end := func() (offsets, error) { return s.endOffsets(ctx, st.n.log) }
	switch {
	case ok && d.Reserve && !provision: // the default's, or one Provision made: declared
		if d.Subscription, err = d.Declare(own, end); err != nil {
			return subDesc{}, err
		}
		if err := st.write(ctx, d); err != nil {
			return subDesc{}, err
		}
	case !ok && s.opts.Bind && !provision:
		n := st.n.sub(sub, "*")
		return subDesc{}, notProvisioned(fmt.Sprintf("%s was not provisioned: its own log and dead log (Kafka topics %s and %s) are missing",
			subLabel(st.name, sub), n.retry, n.dead), st.name, sub)
	case !ok:
		if d, err = st.create(ctx, sub, provision, own); err != nil {
			return subDesc{}, err
		}
		if err := st.write(ctx, d); err != nil {
			return subDesc{}, err
		}
	}
	if def, ok := reg[pubsub.DefaultSubscription]; sub != pubsub.DefaultSubscription && ok {
		var noted bool
		if def.Subscription, noted, err = def.NoteUntil(end); err != nil {
			return subDesc{}, err
		}
		if noted {
			if err := st.write(ctx, def); err != nil {
				return subDesc{}, err
			}
		}
	}
	st.markPublishable()
	if !provision {
		st.sub(sub).keep(d)
	}
	return d, nil
}

// Subscriptions lists the subscriptions of topic, sorted by name.
func (s *store) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	reg, err := s.topic(topic).registry(ctx)
	if err != nil {
		return nil, err
	}
	return reg.named(), nil
}

// named returns the listed subscriptions of reg (not reserves), sorted.
func (reg registry) named() []string { return logstore.Names(maps.Values(reg)) }

// DeleteSubscription removes subscription sub of topic: its registry
// entry, its group, its own log and its dead log (best effort, with
// Options.Bind too). It wraps pubsub.ErrNoSubscription when topic has no
// subscription sub; a named one Provision made and nobody declared is
// deleted.
func (s *store) DeleteSubscription(ctx context.Context, topic, sub string) error {
	st := s.topic(topic)
	st.regMu.Lock()
	defer st.regMu.Unlock()
	reg, err := st.registry(ctx)
	if err != nil {
		return err
	}
	d, ok := reg[sub]
	if !ok || (d.Reserve && sub == pubsub.DefaultSubscription) {
		return fmt.Errorf("%w %q", pubsub.ErrNoSubscription, sub)
	}
	delete(reg, sub)
	if err := st.drop(ctx, sub); err != nil {
		return err
	}
	st.sub(sub).forget()
	switch {
	case len(reg) > 0:
	case s.opts.Bind:
		// A reserve's Kafka topics are the operator's to make: until it
		// provisions the topic again, a publish here is ErrNoTopic.
		st.mu.Lock()
		st.publishable = false
		st.mu.Unlock()
	default:
		def, err := st.create(ctx, pubsub.DefaultSubscription, true, nil)
		if err != nil {
			return err
		}
		if err := st.write(ctx, def); err != nil {
			return err
		}
	}
	n := st.n.sub(sub, d.Gen)
	rctx, cancel := s.request(ctx)
	defer cancel()
	// Best effort: a member of another process may still hold the group,
	// of the mode the subscription was made in.
	group := n.group
	if d.Groups {
		group = n.cgroup
	}
	_, _ = s.adm.DeleteGroups(rctx, group)
	_, _ = s.adm.DeleteTopics(rctx, n.retry, n.dead)
	return nil
}

// ensurePublishable makes sure a publish is kept for a subscription: a
// topic without one gets the default's reserve. It looks once per store
// and topic.
func (st *topicState) ensurePublishable(ctx context.Context) error {
	st.mu.Lock()
	ok := st.publishable
	st.mu.Unlock()
	if ok {
		return nil
	}
	st.regMu.Lock()
	defer st.regMu.Unlock()
	reg, err := st.registry(ctx)
	if err != nil {
		return err
	}
	if len(reg) == 0 && st.s.opts.Bind {
		n := st.n.sub(pubsub.DefaultSubscription, "*")
		return notProvisioned(fmt.Sprintf("topic %q has no subscription to keep its messages for, and Options.Bind makes no reserve of its default one: its own log and dead log (Kafka topics %s and %s) are missing",
			st.name, n.retry, n.dead), st.name, pubsub.DefaultSubscription)
	}
	if len(reg) == 0 {
		d, err := st.create(ctx, pubsub.DefaultSubscription, true, nil)
		if err != nil {
			return err
		}
		if err := st.write(ctx, d); err != nil {
			return err
		}
	}
	st.markPublishable()
	return nil
}

// markPublishable notes that the topic has a subscription.
func (st *topicState) markPublishable() {
	st.mu.Lock()
	st.publishable = true
	st.mu.Unlock()
}
