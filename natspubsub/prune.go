package natspubsub

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A topic's stream keeps every message (limits retention) until conveyor
// purges those that every subscription's consumer has acked: below the
// lowest ack floor of its consumers. Each process that acked messages of
// the topic in the last pruneEvery looks; the purge is the same whoever
// makes it. Interest retention would have the server delete each message
// at its last ack, but a NATS 2.9 server stopped while consumers ack can
// then drop messages it had just stored (docs/natspubsub.md), and it
// costs the server a delete per message. The price here: a message not
// yet acked by some subscription (one waiting for its retry backoff, say)
// keeps the messages after it stored until it is settled.

// pruneEvery is how often a process that acks a topic's messages purges
// the acked ones.
const pruneEvery = time.Second

// prune purges the topic's acked messages while this process acks them,
// until the PubSub closes.
func (st *topicState) prune() {
	ctx := st.ps.ctx
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	var logged bool
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		if st.acked.Swap(0) == 0 {
			continue
		}
		err := st.pruneOnce(ctx)
		switch {
		case err == nil || ctx.Err() != nil:
			logged = false
		case !logged:
			st.ps.opts.Logger.Warn("natspubsub: purging acked messages failed; retrying", "topic", st.name, "error", err)
			logged = true
			st.acked.Add(1) // try again at the next tick
		default:
			st.acked.Add(1)
		}
	}
}

// pruneOnce purges the messages below the lowest ack floor of the topic's
// consumers. With no consumer it purges nothing.
func (st *topicState) pruneOnce(ctx context.Context) error {
	s, err := st.find(ctx)
	if err != nil || s == nil {
		return err
	}
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	list := s.ListConsumers(rctx)
	var floor uint64
	n := 0
	for info := range list.Info() {
		if n == 0 || info.AckFloor.Stream < floor {
			floor = info.AckFloor.Stream
		}
		n++
	}
	if err := list.Err(); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		return err
	}
	st.mu.Lock()
	done := st.purged >= floor
	st.mu.Unlock()
	if n == 0 || done {
		return nil
	}
	if err := s.Purge(rctx, jetstream.WithPurgeSequence(floor+1)); err != nil {
		return err
	}
	st.mu.Lock()
	st.purged = max(st.purged, floor)
	st.mu.Unlock()
	return nil
}
