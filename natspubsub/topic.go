package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/conveyorgo/conveyor/internal/backend"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Headers conveyor sets on the messages it publishes (a message's
// pubsub.Header has keys of its own: header.go).
const (
	hdrID       = "Conveyor-Id"       // the message's ID, kept across re-queues
	hdrAttempts = "Conveyor-Attempts" // a dead message's deliveries
	hdrError    = "Conveyor-Error"    // a dead message's last error
)

// uniquePrefix starts the Nats-Msg-Id of a unique enqueue, followed by the
// key's token: the stream's duplicate window refuses a second message with
// the same id.
const uniquePrefix = "u:"

// Topic is a handle on one subscription of a topic of a PubSub: its
// Enqueue publishes to the topic, its Dequeue reads the subscription.
// Besides pubsub.Topic it has the optional abilities pubsub.Delayer,
// pubsub.UniqueEnqueuer, pubsub.Inbox, pubsub.DeadLetters and
// pubsub.Stater.
type Topic struct {
	st  *topicState
	sub *subState
	h   backend.Handle
	// closed ends at the handle's Close (closeCtx). It is not derived
	// from the PubSub's, so that a handle never closed leaves nothing
	// behind.
	closed   context.Context
	closeCtx context.CancelFunc
}

var (
	_ pubsub.Topic          = (*Topic)(nil)
	_ pubsub.DeadLetters    = (*Topic)(nil)
	_ pubsub.Stater         = (*Topic)(nil)
	_ pubsub.UniqueEnqueuer = (*Topic)(nil)
	_ pubsub.Delayer        = (*Topic)(nil)
	_ pubsub.Inbox          = (*Topic)(nil)
)

// Name returns the topic's name.
func (t *Topic) Name() string { return t.st.name }

// Subscription returns the name of the subscription the handle reads.
func (t *Topic) Subscription() string { return t.sub.name }

// Close closes the handle: its calls return pubsub.ErrClosed from then on,
// and a blocked Dequeue returns. The topic's messages stay on the server.
func (t *Topic) Close() error {
	err := t.h.Close(backend.ClosedError("natspubsub", t.st.name, t.sub.name))
	t.closeCtx()
	return err
}

// check returns the error of a call on a closed handle or PubSub.
func (t *Topic) check() error {
	if t.h.IsClosed() || t.st.ps.isClosed() {
		return backend.ClosedError("natspubsub", t.st.name, t.sub.name)
	}
	return nil
}

// Enqueue publishes data, with the header ctx asks for
// (pubsub.WithHeader), to the topic and returns once the server stored
// it. Data over Options.MaxDataSize is refused with an error wrapping
// pubsub.ErrTooLarge, an invalid header with one wrapping
// pubsub.ErrInvalidHeader; an enqueue asked to run in a transaction
// (pubsub.WithTx) with an error wrapping pubsub.ErrUnsupported, since a
// NATS publish takes part in none.
func (t *Topic) Enqueue(ctx context.Context, data []byte) error {
	h, err := t.checkEnqueue(ctx, data)
	if err != nil {
		return err
	}
	_, err = t.st.publish(ctx, t.st.n.publish, nuid.Next(), "", data, h)
	return err
}

// EnqueueUnique publishes data unless the topic's stream saw a message with
// key within Options.UniqueWindow, and reports whether it did. The key is
// remembered for the window from its first enqueue, whatever becomes of
// its message: unlike dbpubsub, which keeps a key as long as its message,
// a key enqueued longer ago than the window is taken again even while its
// message is still waiting. A bad key wraps pubsub.ErrInvalidKey; the
// rest is as Enqueue.
func (t *Topic) EnqueueUnique(ctx context.Context, key string, data []byte) (bool, error) {
	if err := pubsub.ValidateKey(key); err != nil {
		return false, fmt.Errorf("natspubsub: unique enqueue on %s: %w", backend.Label(t.st.name, t.sub.name), err)
	}
	h, err := t.checkEnqueue(ctx, data)
	if err != nil {
		return false, err
	}
	dup, err := t.st.publish(ctx, t.st.n.publish, nuid.Next(), uniquePrefix+token(key), data, h)
	return err == nil && !dup, err
}

// checkEnqueue refuses what no enqueue of data with ctx can do, makes sure
// the topic has a consumer to keep the message for, and returns the header
// ctx asks for.
func (t *Topic) checkEnqueue(ctx context.Context, data []byte) (pubsub.Header, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if tx := pubsub.TxFrom(ctx); tx != nil {
		return nil, fmt.Errorf("natspubsub: enqueue on %s in a transaction (%T): NATS takes part in none: %w",
			backend.Label(t.st.name, t.sub.name), tx, pubsub.ErrUnsupported)
	}
	if err := pubsub.CheckSize(data, t.st.ps.opts.MaxDataSize); err != nil {
		return nil, fmt.Errorf("natspubsub: enqueue on %s: %w", backend.Label(t.st.name, t.sub.name), err)
	}
	h, err := pubsub.HeaderFrom(ctx)
	if err != nil {
		return nil, fmt.Errorf("natspubsub: enqueue on %s: %w", backend.Label(t.st.name, t.sub.name), err)
	}
	if h != nil {
		// The header travels in the same NATS message as the data.
		if n, limit := len(data)+wireSize(h), t.st.ps.opts.MaxDataSize; n > limit {
			return nil, fmt.Errorf("natspubsub: enqueue on %s: %w: %d bytes of data and %d of header, the limit is %d for both (Options.MaxDataSize)",
				backend.Label(t.st.name, t.sub.name), pubsub.ErrTooLarge, len(data), n-len(data), limit)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h, t.st.ensurePublishable(ctx)
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
	doing := "enqueue on " + backend.Label(st.name, pubsub.DefaultSubscription)
	p := &publishing{done: make(chan struct{})}
	rctx, cancel := ps.request(context.WithoutCancel(ctx))
	if !ps.goBackground(func() {
		defer cancel()
		p.ack, p.err = ps.js.PublishMsg(rctx, msg)
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
		return false, ps.fail(ctx, doing, pubsub.ErrClosed)
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
			return false, fmt.Errorf("natspubsub: %s: %w (the publish goes on: the message may still be stored)", doing, end)
		}
		<-p.done // it finished meanwhile
	}
	if err := p.err; err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			err = fmt.Errorf("%w (%v)", pubsub.ErrTooLarge, err)
		}
		return false, ps.fail(ctx, doing, err)
	}
	return p.ack.Duplicate, nil
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

// RetryPolicy returns the retry policy of the topic's messages (see
// pubsub.RetryReporter).
func (t *Topic) RetryPolicy() pubsub.RetryPolicy { return t.st.ps.opts.Retry }
