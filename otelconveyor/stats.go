package otelconveyor

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The queue gauges' state attribute and its values.
const (
	StateKey        = attribute.Key("conveyor.state")
	StateReady      = "ready"
	StateScheduled  = "scheduled"
	StateProcessing = "processing"
	StateDead       = "dead"
)

// statsCollector feeds the queue gauges from the Stats of the
// subscriptions a wrapped PubSub consumes, read at most once per interval
// when a reader collects.
type statsCollector struct {
	interval time.Duration
	messages metric.Int64ObservableGauge
	age      metric.Float64ObservableGauge

	mu      sync.Mutex
	entries []*statsEntry
	readAt  time.Time
}

type statsEntry struct {
	ps         pubsub.PubSub
	topic, sub string
	handle     pubsub.Topic // opened by the collector, closed by forget
	states     [4]metric.ObserveOption
	all        metric.ObserveOption
	last       admin.Stats
	ok         bool // last holds a reading
	off        bool // the backend cannot count
	gone       bool // its PubSub is closed
}

func newStatsCollector(interval time.Duration) *statsCollector {
	return &statsCollector{interval: interval}
}

func (c *statsCollector) register(m metric.Meter) error {
	var err1, err2, err3 error
	c.messages, err1 = m.Int64ObservableGauge("conveyor.queue.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Messages of a subscription, by state (ready, scheduled, processing, dead), read from the backend's Stats."))
	c.age, err2 = m.Float64ObservableGauge("conveyor.queue.oldest_ready.age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest ready message of a subscription has waited (its lag)."))
	if err1 == nil && err2 == nil {
		_, err3 = m.RegisterCallback(c.observe, c.messages, c.age)
	}
	return errors.Join(err1, err2, err3)
}

// watch adds subscription sub of topic on ps to the gauges.
func (c *statsCollector) watch(ps pubsub.PubSub, topic, sub string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.ps == ps && e.topic == topic && e.sub == sub {
			return
		}
	}
	base := newAttrs(topic, sub).span
	e := &statsEntry{ps: ps, topic: topic, sub: sub, all: metric.WithAttributeSet(attribute.NewSet(base...))}
	for i, s := range []string{StateReady, StateScheduled, StateProcessing, StateDead} {
		e.states[i] = metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], StateKey.String(s))...))
	}
	c.entries = append(c.entries, e)
	c.readAt = time.Time{} // read the newcomer at the next collection
}

// forget removes ps's subscriptions from the gauges and closes the
// handles the collector opened on them.
func (c *statsCollector) forget(ps pubsub.PubSub) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.ps != ps {
			kept = append(kept, e)
		} else if e.handle != nil {
			_ = e.handle.Close()
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}

func (c *statsCollector) observe(ctx context.Context, o metric.Observer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) >= c.interval {
		c.refresh(ctx)
		c.readAt = time.Now()
	}
	for _, e := range c.entries {
		if !e.ok {
			continue
		}
		s := e.last
		for i, n := range []int64{s.Ready, s.Scheduled, s.Processing, s.Dead} {
			o.ObserveInt64(c.messages, n, e.states[i])
		}
		o.ObserveFloat64(c.age, s.OldestReady.Seconds(), e.all)
	}
	return nil
}

// refresh reads every subscription's Stats, each within statsTimeout. A
// subscription that cannot be read now is left out of this collection.
func (c *statsCollector) refresh(ctx context.Context) {
	for _, e := range c.entries {
		if e.off {
			continue
		}
		e.ok = false
		if e.handle == nil {
			// The default subscription's handle is Topic's: Subscribe
			// would declare it, and a topic read only through named
			// subscriptions would keep copies for nobody.
			if e.sub == pubsub.DefaultSubscription {
				e.handle = e.ps.Topic(e.topic)
			} else {
				h, err := pubsub.Subscribe(ctx, e.ps, e.topic, e.sub)
				if err != nil {
					continue
				}
				e.handle = h
			}
		}
		sctx, cancel := context.WithTimeout(ctx, statsTimeout)
		s, err := admin.TopicStats(sctx, e.handle)
		cancel()
		switch {
		case errors.Is(err, pubsub.ErrUnsupported):
			e.off = true
		case errors.Is(err, pubsub.ErrClosed):
			// Its PubSub was closed without a wrapper to say so (an
			// engine's Observer): nothing to read any more.
			e.off, e.gone = true, true
		case err == nil:
			e.last, e.ok = s, true
		}
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if !e.gone {
			kept = append(kept, e)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}
