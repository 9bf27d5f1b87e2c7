package natspubsub

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.PipelinePublisher = (*topicState)(nil)

// PublishPipelined publishes b's messages with JetStream's asynchronous
// publish: every message sent, in order, then their acknowledgements
// awaited together, so that a batch costs about one round trip, not one
// per message. JetStream cannot make a batch all or none: each message is
// stored or refused on its own (pubsub.PipelinedEnqueuer). As publishMsg,
// the publishes run in a goroutine of their own, bounded by
// Options.RequestTimeout and Close, and the caller returns by the end of
// ctx; one who returned so leaves the batch in doubt, and its outcome is
// logged.
func (st *topicState) PublishPipelined(ctx context.Context, _ <-chan struct{}, b driver.Batch) ([]error, error) {
	ps := st.ps
	if b.Header != nil {
		for i, data := range b.Data {
			if n, limit := len(data)+wireSize(b.Header), ps.opts.MaxDataSize; n > limit {
				return nil, fmt.Errorf("%w: item %d: %d bytes of data and %d of header, the limit is %d for both (Options.MaxDataSize)",
					pubsub.ErrTooLarge, i, len(data), n-len(data), limit)
			}
		}
	}
	if err := st.ensurePublishable(ctx); err != nil {
		return nil, err
	}
	msgs := make([]*nats.Msg, len(b.Data))
	for i, data := range b.Data {
		msgs[i] = &nats.Msg{Subject: st.n.publish, Data: append([]byte(nil), data...), Header: nats.Header{hdrID: []string{nuid.Next()}}}
		putHeader(msgs[i].Header, b.Header)
	}
	errs := make([]error, len(msgs))
	done := make(chan struct{})
	var abandoned atomic.Bool
	rctx, cancel := ps.request(context.WithoutCancel(ctx))
	if !ps.goBackground(func() {
		defer cancel()
		defer close(done)
		waits := make([]func() (*jetstream.PubAck, error), len(msgs))
		for i, msg := range msgs {
			waits[i] = publishAsync(rctx, ps.js, msg)
		}
		stored := 0
		for i, wait := range waits {
			if _, errs[i] = wait(); errs[i] == nil {
				stored++
			}
		}
		if stored > 0 {
			ps.answered()
		}
		if abandoned.Load() {
			ps.opts.Logger.Warn(fmt.Sprintf("natspubsub: a batch enqueue of %d that returned before its publishes ended had messages stored after all", len(msgs)),
				"topic", st.name, "count", stored)
		}
	}) {
		cancel()
		return nil, pubsub.ErrClosed
	}
	select {
	case <-done:
	case <-ctx.Done():
		abandoned.Store(true)
		if ps.ctx.Err() != nil {
			return nil, pubsub.ErrClosed
		}
		return nil, fmt.Errorf("%w (the publishes go on: messages may still be stored)", ctx.Err())
	}
	for i, err := range errs {
		switch {
		case err == nil:
		case tooLarge(err):
			errs[i] = fmt.Errorf("%w (%v)", pubsub.ErrTooLarge, err)
		default:
			errs[i] = ps.fail(ctx, "publish", err)
		}
	}
	return errs, nil
}
