package natspubsub

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A delivery this process fetched and let go without handing it to a
// consumer (given back when nobody consumed it, at Close, or before its
// lease ran out while kept) still counts at the server: JetStream's
// delivery count has no way back. So that such a delivery is no attempt,
// and a message no handler received never dies for its lease, the process
// that lets it go first records, in the topic's inbox bucket, how many
// deliveries of the message no handler saw (key "<subscription>.unseen.<stream
// sequence>", kept for Options.InboxRetention like a claim). A redelivery
// (a delivery count above 1) reads it: its attempt is the delivery count
// less the unseen ones.

// requester makes the ctx of one request to the server from the caller's
// ctx: PubSub.request, or at Close, when the PubSub's own ctx has ended,
// a plain timeout (closingRequest).
type requester func(context.Context) (context.Context, context.CancelFunc)

// closingRequest bounds a request made while the PubSub closes by the
// request timeout alone.
func (ps *PubSub) closingRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ps.opts.RequestTimeout)
}

// unseenKey is the key of the unseen deliveries of the message at seq.
func (s *subState) unseenKey(seq uint64) string {
	return s.tok + ".unseen." + strconv.FormatUint(seq, 10)
}

// unseen returns how many deliveries of the message at seq no handler
// saw, as recorded by markUnseen.
func (s *subState) unseen(ctx context.Context, seq uint64) (int, error) {
	kv, err := s.st.inbox(ctx)
	if err != nil {
		return 0, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	e, err := kv.Get(rctx, s.unseenKey(seq))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, s.st.ps.fail(ctx, "reading the unseen deliveries of a message of "+s.label(), err)
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil {
		return 0, nil // not written by conveyor
	}
	return n, nil
}

// markUnseen records that m's delivery reached no handler: one more
// unseen delivery of its message than the ones it had when it came.
// Called before the delivery is given back, while nobody else can have
// the message.
func (s *subState) markUnseen(ctx context.Context, request requester, m *message) error {
	kv, err := s.st.inboxWithin(ctx, request)
	if err != nil {
		return err
	}
	rctx, cancel := request(ctx)
	defer cancel()
	if _, err := kv.Put(rctx, s.unseenKey(m.seq), []byte(strconv.Itoa(m.unseen+1))); err != nil {
		return s.st.ps.fail(ctx, "recording an unseen delivery of a message of "+s.label(), err)
	}
	return nil
}

// giveBack returns msgs, fetched and never handed out, to the server at
// once (a negative ack), each after recording its delivery as unseen, so
// that it is no attempt (markUnseen). A message whose record failed is
// given back all the same, and the failure logged: its delivery then
// counts. request makes each request's ctx; ctx bounds them all.
func (s *subState) giveBack(ctx context.Context, request requester, msgs []*message) {
	var failed error
	now := time.Now()
	for _, m := range msgs {
		if !now.Before(m.deadline) {
			continue // the server may have delivered it again already
		}
		if failed == nil && ctx.Err() == nil {
			failed = s.markUnseen(ctx, request, m)
		}
		_ = m.jm.Nak()
	}
	if failed != nil {
		s.st.ps.opts.Logger.Warn("natspubsub: giving back messages no handler received; their deliveries count as attempts",
			"topic", s.st.name, "subscription", s.name, "messages", len(msgs), "error", failed)
	}
}
