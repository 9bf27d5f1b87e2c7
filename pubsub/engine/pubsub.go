package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/failhook"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// PubSub is a pubsub.PubSub over a driver.Store. Make it with New; a
// backend may embed it in its own PubSub type.
type PubSub struct {
	name     string
	store    driver.Store
	features driver.Features
	defaults driver.SubscriptionConfig
	maxSize  int
	obs      Observer
	named    bool // Options.Named
	fails    *failhook.Reporter

	// The store's optional capabilities found on it.
	subs   driver.Subscriptions // nil without
	lister driver.TopicLister   // nil without

	gate   gate // the quiesce gate
	closed atomic.Bool
	once   sync.Once
}

var (
	_ pubsub.PubSub         = (*PubSub)(nil)
	_ pubsub.Subscriber     = (*PubSub)(nil)
	_ pubsub.SubscriberWith = (*PubSub)(nil)
	_ admin.TopicLister     = (*PubSub)(nil)
	_ wrap.Forwarder        = (*PubSub)(nil)
	_ admin.Quiescer        = (*PubSub)(nil)
)

// New opens store and returns the PubSub over it, or an error naming the
// first field of opts that makes no sense, or the store's error from Open.
func New(store driver.Store, opts Options) (*PubSub, error) {
	if opts.Name == "" {
		return nil, errors.New("engine: Options.Name is empty, want the backend's package name")
	}
	o, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ps := &PubSub{
		name:     o.Name,
		store:    store,
		defaults: driver.SubscriptionConfig{Retry: o.Retry, Lease: o.Lease},
		maxSize:  o.MaxDataSize,
		obs:      o.Observer,
		named:    o.Named,
		fails:    failhook.New(o.OnFailure),
	}
	ps.gate.init()
	if o.Observe != nil {
		ps.obs = o.Observe(ps)
	}
	ps.subs, _ = store.(driver.Subscriptions)
	ps.lister, _ = store.(driver.TopicLister)
	ps.features, err = store.Open(driver.Env{Defaults: ps.defaults, Report: ps.report})
	if err != nil {
		ps.fails.Close()
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	return ps, nil
}

// report raises f on the failure hook.
func (ps *PubSub) report(f pubsub.Failure) { ps.fails.Report(f, nil) }

// Topic returns a handle on the topic name: its enqueues publish to the
// topic, its Dequeue reads the default subscription. A name that
// pubsub.ValidateTopicName rejects gives a handle whose methods all
// return that error.
func (ps *PubSub) Topic(name string) pubsub.Topic {
	if bad := backend.CheckTopicName(ps.name, name); bad != nil {
		return bad
	}
	return ps.newHandle(name, pubsub.DefaultSubscription)
}

// Subscribe creates subscription sub of topic unless it exists and
// returns a handle on it (see pubsub.Subscriber), with the subscription's
// retry policy. On a store without driver.Subscriptions, the default
// subscription is Topic(topic) and another name is pubsub.ErrUnsupported.
func (ps *PubSub) Subscribe(ctx context.Context, topic, sub string) (pubsub.Topic, error) {
	return ps.SubscribeWith(ctx, topic, sub, pubsub.SubscriptionOptions{})
}

// Subscriptions lists the subscriptions of topic, sorted by name.
func (ps *PubSub) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	if err := pubsub.ValidateTopicName(topic); err != nil {
		return nil, fmt.Errorf("%s: %w", ps.name, err)
	}
	if err := ps.usable(ctx, backend.Label(topic, pubsub.DefaultSubscription)); err != nil {
		return nil, err
	}
	if ps.subs == nil {
		return nil, ps.unsupported("subscriptions")
	}
	names, err := ps.subs.Subscriptions(ctx, topic)
	if err != nil {
		return nil, ps.wrap(ctx, "subscriptions of "+backend.Label(topic, pubsub.DefaultSubscription), err)
	}
	return names, nil
}

// DeleteSubscription deletes subscription sub of topic and its copies (see
// pubsub.Subscriber).
func (ps *PubSub) DeleteSubscription(ctx context.Context, topic, sub string) error {
	if err := ps.checkSubscription(ctx, topic, sub); err != nil {
		return err
	}
	if ps.subs == nil {
		return ps.unsupported("subscriptions")
	}
	if err := ps.subs.DeleteSubscription(ctx, topic, sub); err != nil {
		return ps.wrap(ctx, "delete "+backend.Label(topic, sub), err)
	}
	return nil
}

// Topics lists the topics the store keeps (see admin.TopicLister).
func (ps *PubSub) Topics(ctx context.Context) ([]admin.TopicInfo, error) {
	if err := ps.usable(ctx, "topics"); err != nil {
		return nil, err
	}
	if ps.lister == nil {
		return nil, ps.unsupported("listing topics")
	}
	ts, err := ps.lister.Topics(ctx)
	if err != nil {
		return nil, ps.wrap(ctx, "topics", err)
	}
	return ts, nil
}

// Forwards reports the PubSub abilities its store lacks: pubsub.As then
// finds none of them on it (wrap.Forwarder; nothing is below it).
func (ps *PubSub) Forwards(ability any) bool {
	switch ability.(type) {
	case *pubsub.Subscriber, *pubsub.SubscriberWith:
		return ps.subs == nil
	case *admin.TopicLister:
		return ps.lister == nil
	}
	return false
}

// Close stops the PubSub: every handle returns pubsub.ErrClosed from then
// on, the calls waiting return (those waiting on a quiesced PubSub's gate
// too, and Quiesce), the store is closed, and the failure hook has had
// what was waiting when Close returns. A second Close returns
// pubsub.ErrClosed.
func (ps *PubSub) Close() error {
	err := fmt.Errorf("%s: %w", ps.name, pubsub.ErrClosed)
	ps.once.Do(func() {
		ps.closed.Store(true)
		ps.gate.close()
		err = ps.store.Close()
		if err != nil {
			err = fmt.Errorf("%s: close: %w", ps.name, err)
		}
		ps.fails.Close()
	})
	return err
}

// Observed reports whether ps has an Observer (Options.Observer or
// Options.Observe): instrumentation that would wrap ps attaches there
// instead.
func (ps *PubSub) Observed() bool { return ps.obs.StartEnqueue != nil || ps.obs.Delivered != nil }

// Shutdown closes ps; it lets a dependency injector stop it.
func (ps *PubSub) Shutdown(context.Context) error { return ps.Close() }

// checkSubscription checks a topic and a subscription name, and that the
// PubSub can serve them.
func (ps *PubSub) checkSubscription(ctx context.Context, topic, sub string) error {
	if err := pubsub.ValidateSubscription(topic, sub); err != nil {
		return fmt.Errorf("%s: %w", ps.name, err)
	}
	return ps.usable(ctx, backend.Label(topic, sub))
}

// usable fails when ctx ended or ps is closed; what names the subject.
func (ps *PubSub) usable(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ps.closed.Load() {
		return fmt.Errorf("%s: %s: %w", ps.name, what, pubsub.ErrClosed)
	}
	return nil
}

func (ps *PubSub) unsupported(what string) error {
	return fmt.Errorf("%s: %s: %w", ps.name, what, pubsub.ErrUnsupported)
}

// wrap words a store's error of op: ctx's own error as it is, the rest
// with the backend's name and op.
func (ps *PubSub) wrap(ctx context.Context, op string, err error) error {
	if err == nil || isCtxErr(ctx, err) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", ps.name, op, err)
}

// isCtxErr reports whether err is ctx's own error, returned as it is.
func isCtxErr(ctx context.Context, err error) bool {
	return err == context.Canceled || err == context.DeadlineExceeded || (ctx != nil && err == ctx.Err())
}
