package natspubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// copyIDLen is how much of a subscription's token tells its copies' IDs
// apart.
const copyIDLen = 10

// message is one delivery of a message to a consumer: the store's
// handle on it (driver.Ref), which keeps the delivery the engine hands out
// in its slot.
type message struct {
	slot   driver.Slot
	s      *subState
	jm     jetstream.Msg
	id     string
	seq    uint64 // in the topic's stream
	unseen int    // earlier deliveries no handler received (record.go)
	gen    uint64 // the subscription's, when delivered

	keepUntil time.Time // when it is given back if still kept (keepFor)

	mu       sync.Mutex
	deadline time.Time   // of the lease, by this process's clock
	renew    *time.Timer // keeps an extended lease alive at the server
}

var (
	_ driver.Ref          = (*message)(nil)
	_ driver.Subscription = (*subState)(nil)
)

// ID returns the message's ID, the same on every delivery.
func (m *message) ID() string { return m.id }

// leaseMargin is how much earlier than the server this process takes a
// delivery's lease to end: the server started the lease when it sent the
// message, before it arrived here.
func leaseMargin(lease time.Duration) time.Duration { return min(lease/10, time.Second) }

// accept makes a delivery of jm, or returns nil after dealing with a
// message that is not to be handed out: one re-queued for another
// subscription (acked), or one whose last allowed lease ran out (dead).
func (s *subState) accept(jm jetstream.Msg) *message {
	now := time.Now()
	meta, err := jm.Metadata()
	if err != nil {
		s.st.ps.opts.Logger.Error("natspubsub: a delivery without JetStream metadata; giving it back", "topic", s.st.name, "subscription", s.name, "error", err)
		_ = jm.Nak()
		return nil
	}
	s.mu.Lock()
	created, desc, gen := s.created, s.desc, s.gen
	s.mu.Unlock()
	if !s.st.n.addressedTo(jm.Subject(), s.tok) || desc.Skips(meta.Sequence.Stream) || delayedBefore(jm, created) {
		_ = s.acked(jm.Ack()) // not this subscription's
		return nil
	}
	id := jm.Headers().Get(hdrID)
	if id == "" { // published by something other than conveyor
		id = "seq-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	}
	if s.name != pubsub.DefaultSubscription && !strings.HasPrefix(jm.Subject(), s.st.n.toPrefix) {
		// Each subscription's copy has an ID of its own; a re-queued
		// copy carries it already.
		id += "." + s.tok[:copyIDLen]
	}
	lease := s.st.ps.opts.Lease
	m := &message{s: s, jm: jm, id: id, seq: meta.Sequence.Stream, gen: gen,
		deadline: now.Add(lease - leaseMargin(lease)), keepUntil: now.Add(keepFor(lease))}
	d := &m.slot.Delivery
	*d = driver.Delivery{Msg: m, Data: jm.Data(), Header: headerOf(jm.Headers()), Attempt: int(meta.NumDelivered)}
	if d.Attempt > 1 || s.mayBeSettled(m.seq) {
		// Read even while the PubSub closes, so that Close gives the
		// delivery back as unseen rather than counted.
		rec, err := s.readRecord(context.Background(), s.st.ps.closingRequest, m.seq)
		if err != nil {
			// It may be dead, or have reached no handler: neither handed
			// out nor dead for its lease until its record can be read.
			s.st.ps.opts.Logger.Warn("natspubsub: a delivery's record cannot be read; giving it back", "topic", s.st.name,
				"subscription", s.name, "message_id", id, "error", err)
			_ = jm.NakWithDelay(retryWait)
			return nil
		}
		if rec.dead {
			// Dead, and delivered again after a server restart forgot the
			// ack of its death.
			_ = s.acked(jm.Ack())
			return nil
		}
		// The deliveries no handler received are no attempts.
		m.unseen = min(rec.unseen, d.Attempt-1)
		d.Attempt -= m.unseen
	}
	if max := s.subConfig().Retry.WithDefaults().MaxAttempts; d.Attempt > max {
		// Delivered again after the lease of its last attempt ran out.
		d.Attempt = max
		if err := m.kill(context.Background(), driver.ReasonLeaseExpired); err != nil {
			s.st.ps.opts.Logger.Error("natspubsub: making a message dead after its last lease ran out", "topic", s.st.name,
				"subscription", s.name, "message_id", id, "error", err)
		} else {
			s.st.ps.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: s.st.name, Subscription: s.name,
				MessageID: id, Attempt: d.Attempt, Err: errors.New(driver.ReasonLeaseExpired)})
		}
		return nil
	}
	return m
}

// delayedBefore reports whether jm is a delayed message enqueued before
// the subscription's consumer was made: a subscription gets only what was
// enqueued after it, whenever it is due.
func delayedBefore(jm jetstream.Msg, created time.Time) bool {
	return logstore.EnqueuedBefore(jm.Headers().Get, created)
}

// acked counts an ack that err says was sent, for the topic's pruning.
func (s *subState) acked(err error) error {
	if err == nil {
		s.st.acked.Add(1)
	}
	return err
}

// leaseDeadline returns when the lease ends, by this process's clock.
func (m *message) leaseDeadline() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadline
}

// Ack settles d's message for good. It returns once the ack is sent, or
// once the server confirmed it with Options.ConfirmAck.
func (s *subState) Ack(ctx context.Context, d *driver.Delivery) error {
	m := d.Msg.(*message)
	if s.st.ps.opts.ConfirmAck {
		return m.settle(ctx, "ack", func(ctx context.Context) error { return s.acked(m.jm.DoubleAck(ctx)) })
	}
	return m.write(ctx, "ack", func() error { return s.acked(m.jm.Ack()) })
}

// Retry gives d's message back to the server, for a delivery after delay.
// The server keeps no reason with it.
func (s *subState) Retry(ctx context.Context, d *driver.Delivery, delay time.Duration, _ string) error {
	m := d.Msg.(*message)
	return m.write(ctx, "nack", func() error { return m.jm.NakWithDelay(delay) })
}

// Dead keeps d's message in the dead letters with reason (kill).
func (s *subState) Dead(ctx context.Context, d *driver.Delivery, reason string) error {
	m := d.Msg.(*message)
	return m.settle(ctx, "make dead", func(ctx context.Context) error { return m.kill(ctx, reason) })
}

// Extend moves the lease's end to now+by: the server is told the message
// is in progress now, and again every half lease until then.
func (s *subState) Extend(ctx context.Context, d *driver.Delivery, by time.Duration) error {
	m := d.Msg.(*message)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.leased(); err != nil {
		return err
	}
	if err := m.jm.InProgress(); err != nil {
		return s.st.ps.fail(ctx, "extend", err)
	}
	now := time.Now()
	until := now.Add(by)
	m.deadline = until
	if m.renew != nil {
		m.renew.Stop()
		m.renew = nil
	}
	ackWait := s.st.ps.opts.Lease
	var tick func()
	tick = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.renew == nil {
			return
		}
		_ = m.jm.InProgress()
		if time.Now().Add(ackWait).Before(until) {
			m.renew.Reset(ackWait / 2)
		}
	}
	if now.Add(ackWait).Before(until) {
		m.renew = time.AfterFunc(ackWait/2, tick)
	}
	return nil
}

// settle runs op, the settle what of the delivery, while it holds its
// lease (take), with a ctx bounded by the request timeout and Close. The
// engine calls it once per delivery that succeeds.
func (m *message) settle(ctx context.Context, what string, op func(context.Context) error) error {
	if err := m.take(); err != nil {
		return err
	}
	rctx, cancel := m.s.st.ps.request(ctx)
	defer cancel()
	if err := op(rctx); err != nil {
		return m.s.st.ps.fail(ctx, what, err)
	}
	return nil
}

// write is settle for an op that only writes to the connection (a plain
// ack, a negative ack): no request, so no ctx of its own to make.
func (m *message) write(ctx context.Context, what string, op func() error) error {
	if err := m.take(); err != nil {
		return err
	}
	if err := op(); err != nil {
		return m.s.st.ps.fail(ctx, what, err)
	}
	return nil
}

// take readies the delivery to be settled: it returns
// driver.ErrLeaseLost unless the delivery holds its lease, stops renewing
// an extended lease, and forgets the delivery in hand.
func (m *message) take() error {
	m.mu.Lock()
	if err := m.leased(); err != nil {
		m.mu.Unlock()
		return err
	}
	if m.renew != nil {
		m.renew.Stop()
		m.renew = nil
	}
	m.mu.Unlock()
	m.s.settled(m)
	return nil
}

// leased returns driver.ErrLeaseLost when the delivery's lease ran out by
// this process's clock (the server does not fence settles) or its
// subscription was deleted. m.mu is held.
func (m *message) leased() error {
	if !time.Now().Before(m.deadline) {
		return driver.ErrLeaseLost
	}
	m.s.mu.Lock()
	gone := m.s.gen != m.gen
	m.s.mu.Unlock()
	if gone {
		return driver.ErrLeaseLost
	}
	return nil
}

// kill keeps the message in the topic's dead-letter stream, with its
// header, attempts and reason, records it dead (record.go), then acks its
// delivery. The dead copy's message ID
// at the server (Nats-Msg-Id) is the delivery's stream sequence, so a kill
// retried after a lost ack keeps one copy.
func (m *message) kill(ctx context.Context, reason string) error {
	st := m.s.st
	if _, err := st.deadStream(ctx, true); err != nil {
		return err
	}
	msg := &nats.Msg{
		Subject: st.n.deadPrefix + m.s.tok,
		Data:    m.jm.Data(),
		Header: nats.Header{
			nats.MsgIdHdr: []string{fmt.Sprintf("%s:%d:dead", m.s.tok, m.seq)},
		},
	}
	logstore.DeadFields(msg.Header.Set, m.id, m.slot.Delivery.Attempt, reason)
	putHeader(msg.Header, m.slot.Delivery.Header)
	rctx, cancel := st.ps.request(ctx)
	defer cancel()
	if _, err := st.ps.js.PublishMsg(rctx, msg); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			err = fmt.Errorf("%w (%v)", pubsub.ErrTooLarge, err)
		}
		return fmt.Errorf("keeping the message dead: %w", err)
	}
	if err := m.s.writeRecord(ctx, st.ps.request, m.seq, recordDead); err != nil {
		return fmt.Errorf("recording the message dead: %w", err)
	}
	if err := m.s.raiseMaxDead(ctx, m.seq); err != nil {
		return fmt.Errorf("recording the message dead: %w", err)
	}
	if err := m.jm.DoubleAck(rctx); err != nil {
		return fmt.Errorf("acking the delivery of the message kept dead: %w", err)
	}
	st.acked.Add(1)
	return nil
}
