package natspubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// The dead letters of a subscription are the messages on its subject of
// the topic's dead-letter stream, oldest death first: each keeps the
// message's data, its header, its ID, the deliveries it had and its last
// error (logstore.DeadFields); the time the server stored it is when it
// died. Listing, re-queueing, deleting and purging them is the log
// layer's (logstore.DeadLetters); this file is its primitives on the
// stream: a dead record's position is its stream sequence.

var (
	_ driver.DeadLetters = (*subState)(nil)
	_ driver.DeadDeleter = (*subState)(nil)
	_ logstore.DeadLog   = deadLog{}
)

// deadLog is the dead log of a subscription: its subject of the topic's
// dead-letter stream.
type deadLog struct{ s *subState }

// deadSubject is the subject of the subscription's dead messages.
func (s *subState) deadSubject() string { return s.st.n.deadPrefix + s.tok }

// Scan calls each for the subscription's dead messages, oldest first,
// until it returns false.
func (l deadLog) Scan(ctx context.Context, each func(logstore.DeadRecord) bool) error {
	s := l.s
	d, err := s.st.deadStream(ctx, false)
	if err != nil || d == nil {
		return err
	}
	subject := s.deadSubject()
	for seq := uint64(1); ; {
		rctx, cancel := s.st.ps.request(ctx)
		raw, err := d.GetMsg(rctx, seq, jetstream.WithGetMsgSubject(subject))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return s.st.ps.fail(ctx, "reading the dead letters", err)
		}
		if !each(logstore.ParseDead(raw.Header.Get, raw.Sequence, raw.Data, headerOf(raw.Header), raw.Time)) {
			return nil
		}
		seq = raw.Sequence + 1
	}
}

// Has reports whether the dead-letter stream still keeps the entry at
// seq.
func (l deadLog) Has(ctx context.Context, seq uint64) (bool, error) {
	s := l.s
	d, err := s.st.deadStream(ctx, false)
	if err != nil || d == nil {
		return false, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	_, err = d.GetMsg(rctx, seq)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, s.st.ps.fail(ctx, "reading the dead letters", err)
}

// Remove deletes the entry at seq from the dead-letter stream.
func (l deadLog) Remove(ctx context.Context, seq uint64) error {
	s := l.s
	d, err := s.st.deadStream(ctx, false)
	if err != nil {
		return err
	}
	if d == nil {
		return logstore.ErrGone
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	err = d.DeleteMsg(rctx, seq)
	if err == nil {
		return nil
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return logstore.ErrGone
	}
	// The server says why a delete failed only in words: whether the entry
	// is gone is asked again.
	if ok, herr := l.Has(ctx, seq); herr == nil && !ok {
		return logstore.ErrGone
	}
	return s.st.ps.fail(ctx, fmt.Sprintf("deleting message %d from the dead letters", seq), err)
}

// Purge deletes the subscription's dead messages up to seq.
func (l deadLog) Purge(ctx context.Context, seq uint64) error {
	s := l.s
	d, err := s.st.deadStream(ctx, false)
	if err != nil || d == nil {
		return err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	if err := d.Purge(rctx, jetstream.WithPurgeSubject(s.deadSubject()), jetstream.WithPurgeSequence(seq+1)); err != nil {
		return s.st.ps.fail(ctx, "purging the dead letters", err)
	}
	return nil
}

// Subscribed returns an error wrapping pubsub.ErrNoSubscription when the
// subscription's consumer does not exist.
func (l deadLog) Subscribed(ctx context.Context) error {
	c, _, err := l.s.lookup(ctx)
	if err == nil && c == nil {
		err = fmt.Errorf("%w %q", pubsub.ErrNoSubscription, l.s.name)
	}
	return err
}

// Requeue publishes r, with its header, to the subscription alone, with
// a Nats-Msg-Id of the subscription's token and key: the server stores
// one copy for every requeue of the entry within the topic's duplicate
// window.
func (l deadLog) Requeue(ctx context.Context, r logstore.DeadRecord, key string) error {
	s := l.s
	msg := &nats.Msg{Subject: s.st.n.toPrefix + s.tok, Data: r.Data, Header: nats.Header{
		hdrID:         []string{r.ID},
		nats.MsgIdHdr: []string{s.tok + ":" + key},
	}}
	putHeader(msg.Header, r.Header)
	_, err := s.st.publishMsg(ctx, msg)
	return err
}
