package natspubsub

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A message's record, in the topic's inbox bucket (key
// "<subscription token>.seq.<stream sequence>", kept for
// Options.InboxRetention like a claim), says what the server's consumer
// cannot keep for it:
//
//   - how many of its deliveries no handler received. A delivery this
//     process fetched and let go without handing it to a consumer (given
//     back when nobody consumed it, at Close, or before its lease could run
//     out while kept) still counts at the server: JetStream's delivery
//     count has no way back. The process that lets it go records it first,
//     and a redelivery's attempt is the delivery count less these, so a
//     message no handler received never dies for its lease.
//   - that it is dead. kill writes it after the dead copy and before the
//     ack. A server killed (SIGKILL) writes its consumers' acks to disk a
//     moment after it confirmed them (nats-server 2.9's consumer file store
//     flushes them in the background), so after a restart a dead message
//     can be delivered again; one whose record says dead is acked and not
//     handed out.
//
// A delivery reads the record when the server delivered it before (a
// delivery count above 1) or when it may be of a dead message whose ack a
// restart forgot: its stream sequence is at most both the stream's last
// and the highest of a message of the subscription made dead (kept under
// maxDeadKey), as they were when this process started consuming the
// subscription or last reconnected (watchRestart). A subscription whose
// messages never died reads no record for a first delivery.

// record is what a message's record says.
type record struct {
	unseen int  // deliveries no handler received
	dead   bool // kept in the dead letters
}

// recordDead is the value of a dead message's record; any other is the
// count of unseen deliveries.
const recordDead = "dead"

// requester makes the ctx of one request to the server from the caller's
// ctx: PubSub.request, or at Close, when the PubSub's own ctx has ended,
// a plain timeout (closingRequest).
type requester func(context.Context) (context.Context, context.CancelFunc)

// closingRequest bounds a request made while the PubSub closes by the
// request timeout alone.
func (ps *store) closingRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ps.opts.RequestTimeout)
}

// recordKey is the key of the record of the message at seq.
func (s *subState) recordKey(seq uint64) string {
	return s.tok + ".seq." + strconv.FormatUint(seq, 10)
}

// readRecord returns the record of the message at seq, empty if it has
// none or the topic has no inbox bucket under Options.Bind (which then
// keeps no records).
func (s *subState) readRecord(ctx context.Context, request requester, seq uint64) (record, error) {
	kv, err := s.st.inboxToRead(ctx, request)
	if err != nil || kv == nil {
		return record{}, err
	}
	rctx, cancel := request(ctx)
	defer cancel()
	e, err := kv.Get(rctx, s.recordKey(seq))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record{}, nil
	}
	if err != nil {
		return record{}, s.st.ps.fail(ctx, "reading the record of a message of "+s.label(), err)
	}
	if string(e.Value()) == recordDead {
		return record{dead: true}, nil
	}
	n, _ := strconv.Atoi(string(e.Value()))
	return record{unseen: n}, nil
}

// inboxToRead returns the topic's inbox bucket to read records from, nil
// if it does not exist (then no message has a record): reading never
// makes it.
func (st *topicState) inboxToRead(ctx context.Context, request requester) (jetstream.KeyValue, error) {
	st.mu.Lock()
	kv := st.kv
	if kv == nil {
		kv = st.kvRead
	}
	st.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	rctx, cancel := request(ctx)
	defer cancel()
	kv, err := st.ps.js.KeyValue(rctx, st.n.inbox)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, st.ps.fail(ctx, "opening the inbox of "+st.name, err)
	}
	st.mu.Lock()
	st.kvRead = kv
	st.mu.Unlock()
	return kv, nil
}

// writeRecord sets the record of the message at seq to value; without
// an inbox bucket under Options.Bind it does nothing.
func (s *subState) writeRecord(ctx context.Context, request requester, seq uint64, value string) error {
	kv, err := s.st.inboxWithin(ctx, request)
	if errors.Is(err, ErrNoStream) {
		return nil
	}
	if err != nil {
		return err
	}
	rctx, cancel := request(ctx)
	defer cancel()
	if _, err := kv.Put(rctx, s.recordKey(seq), []byte(value)); err != nil {
		return s.st.ps.fail(ctx, "writing the record of a message of "+s.label(), err)
	}
	return nil
}

// maxDeadKey is the key of the highest stream sequence of a message of
// the subscription made dead.
func (s *subState) maxDeadKey() string { return s.tok + ".seq.maxdead" }

// raiseMaxDead makes the highest dead sequence (maxDeadKey) at least seq.
func (s *subState) raiseMaxDead(ctx context.Context, seq uint64) error {
	kv, err := s.st.inbox(ctx)
	if errors.Is(err, ErrNoStream) {
		return nil
	}
	if err != nil {
		return err
	}
	val := []byte(strconv.FormatUint(seq, 10))
	for {
		rctx, cancel := s.st.ps.request(ctx)
		e, err := kv.Get(rctx, s.maxDeadKey())
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = kv.Create(rctx, s.maxDeadKey(), val)
		case err == nil:
			if cur, _ := strconv.ParseUint(string(e.Value()), 10, 64); cur >= seq {
				cancel()
				return nil
			}
			_, err = kv.Update(rctx, s.maxDeadKey(), val, e.Revision())
		}
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongRevision(err) {
			return s.st.ps.fail(ctx, "recording the highest dead message of "+s.label(), err)
		}
		// Another death raised it meanwhile: look again.
	}
}

// maxDead returns the highest dead sequence (maxDeadKey), 0 if none.
func (s *subState) maxDead(ctx context.Context) (uint64, error) {
	kv, err := s.st.inboxToRead(ctx, s.st.ps.request)
	if err != nil || kv == nil {
		return 0, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	e, err := kv.Get(rctx, s.maxDeadKey())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, s.st.ps.fail(ctx, "reading the highest dead message of "+s.label(), err)
	}
	n, _ := strconv.ParseUint(string(e.Value()), 10, 64)
	return n, nil
}

// markUnseen records that m's delivery reached no handler: one more
// unseen delivery of its message than the ones it had when it came.
// Called before the delivery is given back, while nobody else can have
// the message.
func (s *subState) markUnseen(ctx context.Context, request requester, m *message) error {
	return s.writeRecord(ctx, request, m.seq, strconv.Itoa(m.unseen+1))
}

// watchRestart notes, when this process starts consuming the
// subscription and after each reconnect of its connection, up to which
// stream sequence a delivery may be of a dead message whose ack a server
// restart forgot: the lesser of the stream's last sequence and the
// highest dead one. Such a delivery reads its record (mayBeSettled).
func (s *subState) watchRestart(ctx context.Context) error {
	reconnects := s.st.ps.nc.Stats().Reconnects
	s.mu.Lock()
	known := s.checkSince && s.reconnects == reconnects
	s.mu.Unlock()
	if known {
		return nil
	}
	stream, err := s.st.find(ctx)
	if err != nil || stream == nil {
		return err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	info, err := s.st.ps.streamInfo(rctx, stream)
	if err != nil {
		return s.st.ps.fail(ctx, "looking up the stream of "+s.label(), err)
	}
	dead, err := s.maxDead(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.checkTo, s.reconnects, s.checkSince = max(s.checkTo, min(info.State.LastSeq, dead)), reconnects, true
	s.mu.Unlock()
	return nil
}

// mayBeSettled reports whether the message at seq may have been settled
// before a server restart that forgot it (watchRestart).
func (s *subState) mayBeSettled(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seq <= s.checkTo
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
			"topic", s.st.name, "subscription", s.name, "count", len(msgs), "error", failed)
	}
}
