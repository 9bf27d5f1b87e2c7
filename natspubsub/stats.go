package natspubsub

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Stats counts the subscription's messages: ready are those its consumer
// has not delivered yet, processing those delivered and not settled (a
// nacked message waiting for its backoff counts here too: the server does
// not tell them apart), dead those in its dead letters. OldestReady is the
// age of the oldest message not yet delivered. Scheduled counts the
// topic's delayed messages not due yet, for every subscription.
func (t *Topic) Stats(ctx context.Context) (pubsub.Stats, error) {
	if err := t.check(); err != nil {
		return pubsub.Stats{}, err
	}
	cons, _, err := t.sub.lookup(ctx)
	if err != nil || cons == nil { // not a subscription: nothing is kept for it
		return pubsub.Stats{}, err
	}
	rctx, cancel := t.st.ps.request(ctx)
	defer cancel()
	// The server has received the settles this process sent before it
	// answers a ping (it may apply them a moment later).
	if err := t.st.ps.nc.FlushWithContext(rctx); err != nil {
		return pubsub.Stats{}, t.st.ps.fail(ctx, "stats of "+t.sub.label(), err)
	}
	info, err := t.st.ps.consumerInfo(rctx, cons)
	if err != nil {
		return pubsub.Stats{}, t.st.ps.fail(ctx, "stats of "+t.sub.label(), err)
	}
	s := pubsub.Stats{Ready: int64(info.NumPending), Processing: int64(info.NumAckPending)}
	if s.Scheduled, err = t.st.scheduled(ctx); err != nil {
		return s, err
	}
	if info.NumPending > 0 {
		stream, err := t.st.ensure(ctx)
		if err != nil {
			return s, err
		}
		raw, err := stream.GetMsg(rctx, info.Delivered.Stream+1, jetstream.WithGetMsgSubject(t.st.n.subjects))
		switch {
		case err == nil:
			s.OldestReady = max(time.Since(raw.Time), 0)
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return s, t.st.ps.fail(ctx, "stats of "+t.sub.label(), err)
		}
	}
	d, err := t.st.deadStream(ctx, false)
	if err != nil || d == nil {
		return s, err
	}
	subject := t.sub.deadSubject()
	dinfo, err := t.st.ps.streamInfo(rctx, d, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return s, t.st.ps.fail(ctx, "stats of "+t.sub.label(), err)
	}
	s.Dead = int64(dinfo.State.Subjects[subject])
	return s, nil
}
