package kafkapubsub

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// message is one delivery of a record to a consumer: the store's handle
// on it (driver.Ref). Its lease runs by this process's clock: when it ends
// unsettled the record is given back (giveBack); while a delivery is held
// (leased, or kept for a retry's backoff) the cluster's record lock is
// renewed (AckRenew) every third of Options.RecordLock.
type message struct {
	w       *worker
	r       *kgo.Record
	id      string
	attempt int

	mu       sync.Mutex
	state    int         // leased, then settled or lost
	deadline time.Time   // of the lease
	expiry   *time.Timer // ends the lease
	renew    *time.Ticker
	done     chan struct{} // closed when the record is given back or settled
}

// States of a message.
const (
	leased = iota
	settled
	lost
)

var _ driver.Ref = (*message)(nil)

// ID returns the message's ID, the same on every delivery.
func (m *message) ID() string { return m.id }

// lease starts m's lease, of d, and the renewal of its record lock.
func (m *message) lease(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done = make(chan struct{})
	m.deadline = time.Now().Add(d)
	m.expiry = time.AfterFunc(d, m.expire)
	lock := m.w.s.st.s.opts.RecordLock
	m.renew = time.NewTicker(lock / 3)
	renew, done, closed := m.renew, m.done, m.w.s.st.s.ctx.Done()
	go func() {
		for {
			select {
			case <-renew.C:
				m.r.Ack(kgo.AckRenew)
			case <-done:
				return
			case <-closed: // the store closes the member, which releases the record
				return
			}
		}
	}()
}

// expire ends the lease: the record goes back to the cluster.
func (m *message) expire() {
	m.mu.Lock()
	if m.state != leased {
		m.mu.Unlock()
		return
	}
	m.state = lost
	m.mu.Unlock()
	store := m.w.s.st.s
	if !store.goBackground(func() {
		ctx, cancel := store.request(context.Background())
		defer cancel()
		m.giveBack(ctx)
	}) {
		m.end() // the store closes its workers, which releases the record
	}
}

// end stops the renewal of m's lock.
func (m *message) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done != nil {
		close(m.done)
		m.renew.Stop()
		m.done = nil
	}
}

// take moves m from leased to settled, or returns driver.ErrLeaseLost.
func (m *message) take() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != leased || !time.Now().Before(m.deadline) || m.w.dead.Load() {
		return driver.ErrLeaseLost
	}
	m.state = settled
	m.expiry.Stop()
	return nil
}

// finish settles the record with status, waiting for the cluster's
// answer if confirm, else leaving the acknowledgement to go with the
// member's next fetch, or within a second; and counts it settled.
func (m *message) finish(ctx context.Context, what string, status kgo.AckStatus, confirm bool) error {
	m.end()
	err := m.w.ack(ctx, m.r, status, confirm)
	m.w.s.settled(m.w)
	if err != nil {
		return m.w.s.st.s.fail(ctx, what, err)
	}
	return nil
}

// giveBack returns the record to the cluster for another delivery: a
// release, or, once its delivery count reached the cluster's limit (a
// release would archive it), a copy appended to the subscription's retry
// log with its attempts so far (logstore.HeaderDelivered), then the
// record accepted.
func (m *message) giveBack(ctx context.Context) error {
	store := m.w.s.st.s
	if int(m.r.DeliveryCount()) < store.opts.DeliveryLimit {
		return m.finish(ctx, "nack", kgo.AckRelease, true)
	}
	c := m.copyTo(m.w.s.st.n.sub(m.w.s.name, m.w.d.Gen).retry)
	c.Headers = append(c.Headers, kgo.RecordHeader{Key: logstore.HeaderDelivered, Value: []byte(strconv.Itoa(m.attempt))})
	if err := store.produce(ctx, c); err != nil {
		// Released all the same: the cluster archives it at its limit.
		store.opts.Logger.Error("kafkapubsub: a message past the delivery limit could not be appended again; released",
			"topic", m.w.s.st.name, "message_id", m.id, "error", err)
		return m.finish(ctx, "nack", kgo.AckRelease, true)
	}
	return m.finish(ctx, "nack", kgo.AckAccept, true)
}

// copyTo returns a record of m's message for topic: its data, its ID and
// its header.
func (m *message) copyTo(topic string) *kgo.Record { return copyRecord(m.r, m.id, topic) }

// copyRecord returns a record for topic of the message id whose record is
// r: its data, its ID and its header.
func copyRecord(r *kgo.Record, id, topic string) *kgo.Record {
	c := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: make([]kgo.RecordHeader, 0, len(r.Headers)+4)}
	c.Headers = append(c.Headers, kgo.RecordHeader{Key: logstore.HeaderID, Value: []byte(id)})
	for _, h := range r.Headers {
		if _, _, ok := fromWire(h); ok {
			c.Headers = append(c.Headers, h)
		}
	}
	return c
}

// Ack accepts the record; with Options.ConfirmAck it waits for the
// cluster's answer.
func (s *subState) Ack(ctx context.Context, d *driver.Delivery) error {
	if m, ok := d.Msg.(*gmessage); ok {
		return s.groupAck(m)
	}
	m := d.Msg.(*message)
	if err := m.take(); err != nil {
		return err
	}
	return m.finish(ctx, "ack", kgo.AckAccept, s.st.s.opts.ConfirmAck)
}

// Retry gives the record back after delay: at once, or, holding its lock
// meanwhile, when delay has passed (Kafka has no delayed release). The
// cluster keeps no reason with it. In consumer-group mode: groupRetry.
func (s *subState) Retry(ctx context.Context, d *driver.Delivery, delay time.Duration, reason string) error {
	if m, ok := d.Msg.(*gmessage); ok {
		return s.groupRetry(ctx, m, delay, reason)
	}
	m := d.Msg.(*message)
	if err := m.take(); err != nil {
		return err
	}
	if delay <= 0 {
		return m.giveBack(ctx)
	}
	store := s.st.s
	time.AfterFunc(delay, func() {
		if !store.goBackground(func() {
			ctx, cancel := store.request(context.Background())
			defer cancel()
			_ = m.giveBack(ctx)
		}) {
			m.end()
		}
	})
	return nil
}

// Dead keeps the message in the subscription's dead log with reason
// (kill).
func (s *subState) Dead(ctx context.Context, d *driver.Delivery, reason string) error {
	if m, ok := d.Msg.(*gmessage); ok {
		return s.groupDead(ctx, m, reason)
	}
	m := d.Msg.(*message)
	if err := m.take(); err != nil {
		return err
	}
	if err := m.kill(ctx, reason); err != nil {
		m.mu.Lock()
		m.state = leased // still this delivery's: settle it again, or let its lease end
		m.expiry.Reset(time.Until(m.deadline))
		m.mu.Unlock()
		return err
	}
	return m.finish(ctx, "make dead", kgo.AckAccept, true)
}

// kill appends the message to the dead log, with its raw data, header,
// ID, attempts and reason (logstore.DeadFields); the caller then accepts
// the record.
func (m *message) kill(ctx context.Context, reason string) error {
	return m.w.s.kill(ctx, m.w.d, m.r, m.id, m.attempt, reason)
}

// kill appends the message id of record r, after attempts, to the dead
// log of generation d, with its raw data, header, ID, attempts and reason
// (logstore.DeadFields).
func (s *subState) kill(ctx context.Context, d subDesc, r *kgo.Record, id string, attempts int, reason string) error {
	c := copyRecord(r, id, s.st.n.sub(s.name, d.Gen).dead)
	c.Headers = c.Headers[1:] // DeadFields sets the ID
	logstore.DeadFields(func(k, v string) {
		c.Headers = append(c.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}, id, attempts, reason)
	if err := s.st.s.produce(ctx, c); err != nil {
		return fmt.Errorf("keeping the message dead: %w", err)
	}
	return nil
}

// Extend moves the lease's end to now+by; the record lock is renewed
// meanwhile.
func (s *subState) Extend(ctx context.Context, d *driver.Delivery, by time.Duration) error {
	if m, ok := d.Msg.(*gmessage); ok {
		return s.groupExtend(m, by)
	}
	m := d.Msg.(*message)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != leased || m.w.dead.Load() || !m.expiry.Stop() {
		return driver.ErrLeaseLost
	}
	m.deadline = time.Now().Add(by)
	m.expiry.Reset(by)
	return nil
}
