package otelconveyor

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// counts are the message counters of a topic (sent) or of one of its
// subscriptions (the others), shared by every handle on it. A message
// adds to an atomic; the OpenTelemetry counters read them when a reader
// collects (observable counters), so that counting costs a message next
// to nothing.
type counts struct {
	sent, consumed, acked, nacked, dead atomic.Int64
	pub                                 bool // a topic's: sent only
	observe                             metric.ObserveOption
}

// counters are the observable counters and the counts they read.
type counters struct {
	sent, consumed, acked, nacked, dead metric.Int64ObservableCounter

	mu  sync.Mutex
	all map[[2]string]*counts // by topic and subscription ("" for the topic's)
}

func (c *counters) register(m metric.Meter) error {
	var errs [5]error
	counter := func(i int, name, desc string) metric.Int64ObservableCounter {
		oc, err := m.Int64ObservableCounter(name, metric.WithUnit("{message}"), metric.WithDescription(desc))
		errs[i] = err
		return oc
	}
	c.sent = counter(0, "messaging.client.sent.messages", "Messages enqueued (published), by topic.")
	c.consumed = counter(1, "messaging.client.consumed.messages", "Deliveries handed to a consumer, by topic and subscription.")
	c.acked = counter(2, "conveyor.messages.acked", "Deliveries acked, by topic and subscription.")
	c.nacked = counter(3, "conveyor.messages.nacked", "Deliveries nacked or failed and retried, by topic and subscription.")
	c.dead = counter(4, "conveyor.messages.dead", "Deliveries that made their message dead (rejected, or failed on the last attempt), by topic and subscription.")
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	_, err := m.RegisterCallback(c.observeAll, c.sent, c.consumed, c.acked, c.nacked, c.dead)
	return err
}

// of returns the counts of subscription sub of topic ("" for the topic's
// own), with span's attributes.
func (c *counters) of(topic, sub string, span []attribute.KeyValue) *counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := [2]string{topic, sub}
	if n, ok := c.all[key]; ok {
		return n
	}
	if c.all == nil {
		c.all = map[[2]string]*counts{}
	}
	n := &counts{pub: sub == "", observe: metric.WithAttributeSet(attribute.NewSet(span...))}
	c.all[key] = n
	return n
}

func (c *counters) observeAll(_ context.Context, o metric.Observer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.all {
		if n.pub {
			o.ObserveInt64(c.sent, n.sent.Load(), n.observe)
			continue
		}
		o.ObserveInt64(c.consumed, n.consumed.Load(), n.observe)
		o.ObserveInt64(c.acked, n.acked.Load(), n.observe)
		o.ObserveInt64(c.nacked, n.nacked.Load(), n.observe)
		o.ObserveInt64(c.dead, n.dead.Load(), n.observe)
	}
	return nil
}
