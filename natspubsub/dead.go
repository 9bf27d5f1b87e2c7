package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// The dead letters of a subscription are the messages on its subject of
// the topic's dead-letter stream, oldest death first: each keeps the
// message's data, its header, its ID, the deliveries it had and its last
// error; the time the server stored it is when it died.

var _ driver.DeadLetters = (*subState)(nil)

// deadEntry is one dead message and where it is kept.
type deadEntry struct {
	admin.DeadMessage
	seq uint64 // in the dead-letter stream
}

// deadSubject is the subject of the subscription's dead messages.
func (s *subState) deadSubject() string { return s.st.n.deadPrefix + s.tok }

// scanDead calls each for the subscription's dead messages, oldest first,
// until it returns false.
func (s *subState) scanDead(ctx context.Context, each func(deadEntry) bool) error {
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
		e := deadEntry{seq: raw.Sequence, DeadMessage: admin.DeadMessage{ID: raw.Header.Get(hdrID),
			Data: raw.Data, DiedAt: raw.Time, Header: headerOf(raw.Header)}}
		e.Attempts, _ = strconv.Atoi(raw.Header.Get(hdrAttempts))
		e.LastError, _ = url.QueryUnescape(raw.Header.Get(hdrError))
		if !each(e) {
			return nil
		}
		seq = raw.Sequence + 1
	}
}

// ListDead returns up to limit dead messages of the subscription (all when
// limit <= 0), oldest death first.
func (s *subState) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	var out []admin.DeadMessage
	err := s.scanDead(ctx, func(e deadEntry) bool {
		out = append(out, e.DeadMessage)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// RequeueDead makes the dead message id ready again for the subscription,
// with a fresh attempt count and the same ID. It wraps admin.ErrNotFound
// when id is not dead there, and admin.ErrInvalidID too when id cannot be
// a message ID.
func (s *subState) RequeueDead(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("%w (%w)", admin.ErrInvalidID, admin.ErrNotFound)
	}
	var found *deadEntry
	err := s.scanDead(ctx, func(e deadEntry) bool {
		if e.ID == id {
			found = &e
		}
		return found == nil
	})
	if err != nil {
		return err
	}
	if found == nil {
		return admin.ErrNotFound
	}
	return s.requeue(ctx, *found)
}

// requeue publishes e, with its header, to the subscription alone, then
// deletes it from the dead letters: a failure between the two leaves it
// both ready and dead, never neither. The publish's Nats-Msg-Id is made of
// the dead entry (requeueMsgID), so the server stores one copy for every
// requeue of the entry within the topic's duplicate window (concurrent
// ones, or one retried after a lost reply); the delete, atomic at the
// server, decides which requeue succeeded, and the others wrap
// admin.ErrNotFound. A requeue that finds the entry gone before it
// publishes publishes nothing.
func (s *subState) requeue(ctx context.Context, e deadEntry) error {
	if c, _, err := s.lookup(ctx); err != nil || c == nil {
		if err == nil {
			err = fmt.Errorf("%w %q", pubsub.ErrNoSubscription, s.name)
		}
		return err
	}
	d, err := s.st.deadStream(ctx, false)
	if err != nil {
		return err
	}
	if d == nil {
		return s.requeueGone(e)
	}
	if ok, err := s.deadHas(ctx, d, e.seq); err != nil || !ok {
		if err == nil {
			err = s.requeueGone(e)
		}
		return err
	}
	msg := &nats.Msg{Subject: s.st.n.toPrefix + s.tok, Data: e.Data, Header: nats.Header{
		hdrID:         []string{e.ID},
		nats.MsgIdHdr: []string{requeueMsgID(s.tok, e)},
	}}
	putHeader(msg.Header, e.Header)
	if _, err := s.st.publishMsg(ctx, msg); err != nil {
		return err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	err = d.DeleteMsg(rctx, e.seq)
	if err == nil {
		return nil
	}
	// The server says why a delete failed only in words: whether the entry
	// is gone is asked again.
	if ok, herr := s.deadHas(ctx, d, e.seq); herr == nil && !ok {
		return s.requeueGone(e)
	}
	return s.st.ps.fail(ctx, "deleting re-queued message "+e.ID+" from the dead letters", err)
}

// requeueMsgID is the Nats-Msg-Id of the requeue of dead entry e of the
// subscription tok: the same for every requeue of that entry, different
// for any other (its sequence in the dead-letter stream and the time the
// server stored it, which tell it from an entry of a stream made again).
func requeueMsgID(tok string, e deadEntry) string {
	return fmt.Sprintf("%s:%d:%d:requeue", tok, e.seq, e.DiedAt.UnixNano())
}

// deadHas reports whether the dead-letter stream d still keeps the entry
// at seq.
func (s *subState) deadHas(ctx context.Context, d jetstream.Stream, seq uint64) (bool, error) {
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	_, err := d.GetMsg(rctx, seq)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, s.st.ps.fail(ctx, "reading the dead letters", err)
}

// requeueGone is the error of a requeue of e, which another requeue (or a
// delete, a purge, the retention) took from the dead letters first.
func (s *subState) requeueGone(e deadEntry) error {
	return fmt.Errorf("%w (re-queued or deleted meanwhile)", admin.ErrNotFound)
}

// RequeueAllDead re-queues every dead message of the subscription and
// says how many; one another call re-queued or deleted meanwhile is not
// counted.
func (s *subState) RequeueAllDead(ctx context.Context) (int, error) {
	var all []deadEntry
	if err := s.scanDead(ctx, func(e deadEntry) bool { all = append(all, e); return true }); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range all {
		err := s.requeue(ctx, e)
		if errors.Is(err, admin.ErrNotFound) {
			continue // re-queued or deleted meanwhile by another call
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// PurgeDead deletes every dead message of the subscription for good and
// says how many.
func (s *subState) PurgeDead(ctx context.Context) (int, error) {
	var n int
	var last uint64
	if err := s.scanDead(ctx, func(e deadEntry) bool { n++; last = e.seq; return true }); err != nil || n == 0 {
		return 0, err
	}
	d, err := s.st.deadStream(ctx, false)
	if err != nil {
		return 0, err
	}
	rctx, cancel := s.st.ps.request(ctx)
	defer cancel()
	// Up to the last one counted: a message dying meanwhile stays.
	if err := d.Purge(rctx, jetstream.WithPurgeSubject(s.deadSubject()), jetstream.WithPurgeSequence(last+1)); err != nil {
		return 0, s.st.ps.fail(ctx, "purging the dead letters", err)
	}
	return n, nil
}
