package otelconveyor

import (
	"context"
	"sync"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// observer is a Telemetry attached to an engine's hook points
// (engine.Observer) instead of wrapping its handles: the same spans and
// counts as WrapTopic's, from the engine's enqueues, deliveries and
// settles.
type observer struct {
	tel  *Telemetry
	ps   pubsub.PubSub // whose subscriptions feed the gauges
	subs sync.Map      // [2]string{topic, sub} -> *topic_, the spans' and counts' set-up
}

// observe returns t's engine.Observer of ps (engine.Options.Observe).
func (t *Telemetry) observe(ps *engine.PubSub) engine.Observer {
	o := &observer{tel: t, ps: ps}
	return engine.Observer{StartEnqueue: o.startEnqueue, Delivered: o.delivered}
}

// of returns the set-up of subscription sub of topic, made once: a
// wrapped topic's, without the topic.
func (o *observer) of(topic, sub string) *topic_ {
	key := [2]string{topic, sub}
	if w, ok := o.subs.Load(key); ok {
		return w.(*topic_)
	}
	w := o.tel.WrapTopic(nil, topic, sub).(*topic_)
	if st := o.tel.stats; st != nil {
		w.watch = func() { st.watch(o.ps, topic, sub) }
	}
	actual, _ := o.subs.LoadOrStore(key, w)
	return actual.(*topic_)
}

// sendOpOf is the send span's operation of each engine enqueue.
var sendOpOf = [...]sendOp{
	engine.OpEnqueue:       opEnqueue,
	engine.OpEnqueueAt:     opEnqueueAt,
	engine.OpEnqueueBatch:  opEnqueueBatch,
	engine.OpEnqueueUnique: opEnqueueUnique,
}

// startEnqueue starts the send span of an enqueue, as a wrapped topic's
// publish does.
func (o *observer) startEnqueue(ctx context.Context, e engine.Enqueue) (context.Context, func(engine.EnqueueEnd)) {
	op := opEnqueue
	if int(e.Op) < len(sendOpOf) {
		op = sendOpOf[e.Op]
	}
	s := o.of(e.Topic, pubsub.DefaultSubscription).start(ctx, e.N, e.Size, op)
	return s.ctx, func(end engine.EnqueueEnd) {
		err := end.Err
		if end.Duplicate {
			err = errNotAdded
		}
		s.end(err)
	}
}

// delivered starts the process span of a delivery, as a wrapped topic's
// Dequeue does; the span is the delivery's Observation.
func (o *observer) delivered(d engine.Delivery) engine.Observation {
	w := o.of(d.Topic, d.Subscription)
	if w.watch != nil && !w.watched.Load() && w.watched.CompareAndSwap(false, true) {
		w.watch()
	}
	return w.deliver(d.Message)
}

var _ engine.Observation = (*message)(nil)

// Settled ends the process span with the outcome the engine decided (see
// engine.Observation); an extension of the lease changes nothing.
func (m *message) Settled(s engine.Settle) {
	var outcome string
	switch s.Outcome {
	case engine.Acked:
		outcome = OutcomeAck
	case engine.Retried:
		outcome = OutcomeNack
	case engine.Dead:
		outcome = OutcomeDead
	default:
		return
	}
	m.settled(outcome, s.Reason, s.Err)
}
