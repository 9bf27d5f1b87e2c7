package natspubsub

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A delayed message waits in the topic's schedule stream (names.go), the
// delay log of the log layer (logstore: its headers, the mover's loop and
// its move of one record), a work queue read by one durable consumer, the
// mover. A message not due yet is given back to the server for the time
// it still has to wait (a delayed negative ack), so it is fetched again
// when due. A due message is published with a Nats-Msg-Id of its place
// in the schedule, so that a mover stopped between the publish and the
// schedule's ack publishes it once, within Options.UniqueWindow. NATS 2.9
// has no scheduled messages of its own: a schedule of many messages due
// far apart costs the server a delayed redelivery each, and a message is
// published within a few milliseconds after it is due, not at the
// instant.

// moverName is the durable consumer of a schedule stream.
const moverName = "mover"

// moverAckWait is how long a mover may hold a delayed message before the
// server gives it to another.
const moverAckWait = 30 * time.Second

// publishAt keeps data, with header h, in the topic's schedule until at,
// a time after now.
func (st *topicState) publishAt(ctx context.Context, data []byte, h pubsub.Header, at time.Time) error {
	if _, err := st.schedule(ctx); err != nil {
		return err
	}
	st.startMover()
	msg := &nats.Msg{Subject: st.n.schedule, Data: data, Header: nats.Header{hdrID: []string{nuid.Next()}}}
	logstore.DelayFields(msg.Header.Set, at, time.Now())
	putHeader(msg.Header, h)
	_, err := st.publishMsg(ctx, msg)
	return err
}

// schedule returns the mover of the topic's schedule stream, creating
// both on first use.
func (st *topicState) schedule(ctx context.Context) (jetstream.Consumer, error) {
	st.mu.Lock()
	c := st.mover
	st.mu.Unlock()
	if c != nil {
		return c, nil
	}
	cfg := st.scheduleConfig()
	s, err := st.open(ctx, &st.sched, st.n.schedStream, &cfg)
	if err != nil {
		return nil, err
	}
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	c, err = s.CreateOrUpdateConsumer(rctx, jetstream.ConsumerConfig{
		Durable:    moverName,
		AckPolicy:  jetstream.AckExplicitPolicy,
		AckWait:    moverAckWait,
		MaxDeliver: -1,
	})
	if err != nil {
		return nil, st.ps.fail(ctx, "opening the schedule of "+backend.Label(st.name, pubsub.DefaultSubscription), err)
	}
	st.mu.Lock()
	st.mover = c
	st.mu.Unlock()
	return c, nil
}

// startMover starts the topic's mover and pruner loops in this store,
// once. Every Dequeue calls it: after the first, it is one atomic load.
func (st *topicState) startMover() {
	if st.moving.Load() {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.moving.Load() {
		st.moving.Store(st.ps.goBackground(st.move) && st.ps.goBackground(st.prune))
	}
}

// move publishes the topic's delayed messages when due, until the store
// closes. While the server cannot be reached it keeps trying, logging
// once.
func (st *topicState) move() {
	logstore.RunMover(st.ps.ctx, st.moveOnce, func(err error) time.Duration {
		if errors.Is(err, ErrNoStream) {
			return fetchWait // bound to streams the operator has not made yet
		}
		return retryWait
	}, func(err error) bool {
		if errors.Is(err, ErrNoStream) {
			return false
		}
		st.ps.opts.Logger.Warn("natspubsub: moving delayed messages failed; retrying", "topic", st.name, "error", err)
		return true
	})
}

// moveOnce makes one pull request of the mover, waiting up to fetchWait,
// and publishes what is due of what it brings.
func (st *topicState) moveOnce(ctx context.Context) error {
	c, err := st.schedule(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	batch, err := c.Fetch(maxFetch, jetstream.FetchContext(fctx))
	if err != nil {
		return err
	}
	for jm := range batch.Messages() {
		if err := logstore.Move(ctx, delayed{st, jm}); err != nil {
			return err
		}
	}
	if err := batch.Error(); err != nil && fctx.Err() == nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
			st.mu.Lock()
			st.mover, st.sched = nil, nil // deleted: made again
			st.mu.Unlock()
		}
		return err
	}
	return nil
}

// delayed is a record of the schedule stream, fetched by the mover.
type delayed struct {
	st *topicState
	jm jetstream.Msg
}

// Get returns the record's header key.
func (d delayed) Get(key string) string { return d.jm.Headers().Get(key) }

// Later gives the record back to the server, for a redelivery after wait.
func (d delayed) Later(wait time.Duration) error { return d.jm.NakWithDelay(wait) }

// Publish publishes the record to the topic, with its ID, enqueue time
// and header, and a Nats-Msg-Id of its ID.
func (d delayed) Publish(ctx context.Context) error {
	st, jm := d.st, d.jm
	meta, err := jm.Metadata()
	if err != nil {
		return err
	}
	if err := st.ensurePublishable(ctx); err != nil {
		return err
	}
	id := jm.Headers().Get(hdrID)
	if id == "" { // not published by conveyor
		id = "sched-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	}
	msg := &nats.Msg{Subject: st.n.publish, Data: jm.Data(), Header: nats.Header{
		hdrID:                 []string{id},
		hdrEnqueued:           []string{jm.Headers().Get(hdrEnqueued)},
		jetstream.MsgIDHeader: []string{"s:" + id},
	}}
	putHeader(msg.Header, headerOf(jm.Headers()))
	_, err = st.publishMsg(ctx, msg)
	return err
}

// Done acks the record, waiting for the server.
func (d delayed) Done(ctx context.Context) error {
	rctx, cancel := d.st.ps.request(ctx)
	defer cancel()
	return d.jm.DoubleAck(rctx)
}

// scheduled counts the topic's delayed messages: 0 when it has no
// schedule stream.
func (st *topicState) scheduled(ctx context.Context) (int64, error) {
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	s, err := st.ps.js.Stream(rctx, st.n.schedStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	var info *jetstream.StreamInfo
	if err == nil {
		info, err = s.Info(rctx)
	}
	if err != nil {
		return 0, st.ps.fail(ctx, "counting the delayed messages of "+backend.Label(st.name, pubsub.DefaultSubscription), err)
	}
	return int64(info.State.Msgs), nil
}
