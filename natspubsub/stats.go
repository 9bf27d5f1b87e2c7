package natspubsub

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Stater = (*subState)(nil)

// Stats counts the subscription's messages: ready are those its consumer
// has not delivered yet, processing those delivered and not settled (a
// nacked message waiting for its backoff counts here too: the server does
// not tell them apart), dead those in its dead letters. OldestReady is the
// age of the oldest message not yet delivered. Scheduled counts the
// topic's delayed messages not due yet, for every subscription.
func (sub *subState) Stats(ctx context.Context) (admin.Stats, error) {
	cons, _, err := sub.lookup(ctx)
	if err != nil || cons == nil { // not a subscription: nothing is kept for it
		return admin.Stats{}, err
	}
	rctx, cancel := sub.st.ps.request(ctx)
	defer cancel()
	// The server has received the settles this process sent before it
	// answers a ping (it may apply them a moment later).
	if err := sub.st.ps.nc.FlushWithContext(rctx); err != nil {
		return admin.Stats{}, sub.st.ps.fail(ctx, "stats", err)
	}
	info, err := sub.st.ps.consumerInfo(rctx, cons)
	if err != nil {
		return admin.Stats{}, sub.st.ps.fail(ctx, "stats", err)
	}
	s := admin.Stats{Ready: int64(info.NumPending), Processing: int64(info.NumAckPending)}
	if s.Scheduled, err = sub.st.scheduled(ctx); err != nil {
		return s, err
	}
	if info.NumPending > 0 {
		stream, err := sub.st.ensure(ctx)
		if err != nil {
			return s, err
		}
		raw, err := stream.GetMsg(rctx, info.Delivered.Stream+1, jetstream.WithGetMsgSubject(sub.st.n.subjects))
		switch {
		case err == nil:
			s.OldestReady = max(time.Since(raw.Time), 0)
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return s, sub.st.ps.fail(ctx, "stats", err)
		}
	}
	d, err := sub.st.deadStream(ctx, false)
	if err != nil || d == nil {
		return s, err
	}
	subject := sub.deadSubject()
	dinfo, err := sub.st.ps.streamInfo(rctx, d, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return s, sub.st.ps.fail(ctx, "stats", err)
	}
	s.Dead = int64(dinfo.State.Subjects[subject])
	return s, nil
}
