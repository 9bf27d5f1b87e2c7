package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Headers conveyor sets on the messages it publishes, the log layer's
// (a message's pubsub.Header has keys of its own: header.go).
const (
	hdrID         = logstore.HeaderID
	hdrAttempts   = logstore.HeaderAttempts
	hdrError      = logstore.HeaderError
	hdrDue        = logstore.HeaderDue
	hdrEnqueued   = logstore.HeaderEnqueued
	hdrUser       = logstore.HeaderUser
	hdrUserPadded = logstore.HeaderUserPadded
)

// uniquePrefix starts the Nats-Msg-Id of a unique enqueue, followed by the
// key's token: the stream's duplicate window refuses a second message with
// the same id.
const uniquePrefix = "u:"

var _ driver.Topic = (*topicState)(nil)

// Subscription returns the state of subscription name of the topic.
func (st *topicState) Subscription(name string) driver.Subscription { return st.sub(name) }

// Publish stores m in the topic's stream and returns once the server
// stored it; a delayed one waits in the topic's schedule (delay.go). With
// a key, it reports false when the stream saw a message with that key
// within Options.UniqueWindow. The key is remembered for the window from
// its first enqueue, whatever becomes of its message: unlike dbpubsub,
// which keeps a key as long as its message, a key enqueued longer ago
// than the window is taken again even while its message is still
// waiting. The header travels in the same NATS message as the data, so
// both count toward Options.MaxDataSize.
func (st *topicState) Publish(ctx context.Context, _ <-chan struct{}, m driver.Outgoing) (bool, error) {
	if m.Header != nil {
		if n, limit := len(m.Data)+wireSize(m.Header), st.ps.opts.MaxDataSize; n > limit {
			return false, fmt.Errorf("%w: %d bytes of data and %d of header, the limit is %d for both (Options.MaxDataSize)",
				pubsub.ErrTooLarge, len(m.Data), n-len(m.Data), limit)
		}
	}
	if err := st.ensurePublishable(ctx); err != nil {
		return false, err
	}
	if !m.At.IsZero() && time.Now().Before(m.At) {
		return true, st.publishAt(ctx, m.Data, m.Header, m.At)
	}
	msgID := ""
	if m.Key != "" {
		msgID = uniquePrefix + token(m.Key)
	}
	dup, err := st.publish(ctx, st.n.publish, nuid.Next(), msgID, m.Data, m.Header)
	return err == nil && !dup, err
}

// publish stores data as message id, with header h, on subject of the
// topic's stream. With a msgID (the Nats-Msg-Id header), it reports
// whether the stream refused it as a duplicate within its window.
func (st *topicState) publish(ctx context.Context, subject, id, msgID string, data []byte, h pubsub.Header) (dup bool, err error) {
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{hdrID: []string{id}}}
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	putHeader(msg.Header, h)
	return st.publishMsg(ctx, msg)
}

// publishMsg stores msg, on one of the topic's subjects, and reports
// whether the server refused it as a duplicate.
//
// It returns by the end of ctx whatever the connection does: nats.go
// writes a message to the socket in the publishing goroutine, which a full
// socket buffer blocks for as long as the connection's FlusherTimeout. So
// the publish runs in a goroutine of its own, bounded by
// Options.RequestTimeout and Close, not by ctx, and the caller returns by
// the end of ctx or of the request timeout; a caller who returned so
// leaves the message in doubt (it is written once the socket takes it,
// and may be stored), and that publish's outcome is logged: a message
// stored after all at Warn, naming its ID.
func (st *topicState) publishMsg(ctx context.Context, msg *nats.Msg) (dup bool, err error) {
	ps := st.ps
	p := &publishing{done: make(chan struct{})}
	rctx, cancel := ps.request(context.WithoutCancel(ctx))
	if !ps.goBackground(func() {
		defer cancel()
		p.ack, p.err = publishAsync(rctx, ps.js, msg)()
		if p.err == nil {
			ps.answered()
		}
		if p.state.CompareAndSwap(publishRunning, publishDone) {
			close(p.done)
			return
		}
		// The caller returned before the publish ended.
		if p.err != nil {
			ps.requestFailed(p.err)
			ps.opts.Logger.Debug("natspubsub: an enqueue that returned before its publish ended was not stored", "topic", st.name,
				"message_id", msg.Header.Get(hdrID), "error", p.err)
			return
		}
		ps.opts.Logger.Warn("natspubsub: an enqueue that returned before its publish ended was stored after all", "topic", st.name,
			"message_id", msg.Header.Get(hdrID), "duplicate", p.ack.Duplicate)
	}) {
		cancel()
		return false, pubsub.ErrClosed
	}
	// The caller waits for the publish, its own ctx, or the request's
	// (Options.RequestTimeout, Close), whichever ends first.
	var end error
	select {
	case <-p.done:
	case <-ctx.Done():
		end = ctx.Err()
	case <-rctx.Done():
		end = rctx.Err()
	}
	if end != nil {
		if p.state.CompareAndSwap(publishRunning, publishAbandoned) {
			// Not fail: the publish's own outcome counts for the
			// connection's watch, when it comes.
			if ps.ctx.Err() != nil {
				end = pubsub.ErrClosed
			}
			return false, fmt.Errorf("%w (the publish goes on: the message may still be stored)", end)
		}
		<-p.done // it finished meanwhile
	}
	if err := p.err; err != nil {
		if tooLarge(err) {
			err = fmt.Errorf("%w (%v)", pubsub.ErrTooLarge, err)
		}
		return false, ps.fail(ctx, "publish", err)
	}
	return p.ack.Duplicate, nil
}

// publishAsync publishes msg with JetStream's asynchronous publish and
// returns a wait for its acknowledgement, which gives up when ctx ends:
// the connection's one reply subscription answers every publish, where a
// synchronous publish is a request of its own (docs/natspubsub.md,
// "Enqueue through the asynchronous publish"). Both retry a publish that
// found no stream (no responders) alike. With more publishes awaiting
// their acknowledgement than nats.go allows (PublishAsyncMaxPending), it
// publishes synchronously instead, before it returns.
func publishAsync(ctx context.Context, js jetstream.JetStream, msg *nats.Msg) (wait func() (*jetstream.PubAck, error)) {
	f, err := js.PublishMsgAsync(msg)
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		ack, err := js.PublishMsg(ctx, msg)
		return func() (*jetstream.PubAck, error) { return ack, err }
	}
	if err != nil {
		return func() (*jetstream.PubAck, error) { return nil, err }
	}
	return func() (*jetstream.PubAck, error) {
		select {
		case ack := <-f.Ok():
			return ack, nil
		case err := <-f.Err():
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tooLarge reports whether err is a publish refused for its size: over
// the server's max_payload, or over the stream's max_msg_size.
func tooLarge(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum)
}

// publishing is one publish of publishMsg, whose caller may leave before
// it is done.
type publishing struct {
	state atomic.Int32  // publishRunning, then publishDone or publishAbandoned
	done  chan struct{} // closed at publishDone
	ack   *jetstream.PubAck
	err   error
}

// States of a publishing.
const (
	publishRunning int32 = iota
	publishDone
	publishAbandoned
)
