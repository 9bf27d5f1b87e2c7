package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// gmessage is one delivery of a record in consumer-group mode (group.go):
// the store's handle on it (driver.Ref). Its lease runs by this process's
// clock; when it ends unsettled the message is appended again to the
// subscription's own log (or made dead after its last attempt) and the
// record settled.
type gmessage struct {
	g       *reader
	f       fetched
	id      string
	attempt int

	mu       sync.Mutex
	state    int       // leased, then settled or lost (message.go)
	busy     bool      // a settle is under way
	deadline time.Time // of the lease
	expiry   *time.Timer
}

var _ driver.Ref = (*gmessage)(nil)

// ID returns the message's ID, the same on every delivery.
func (m *gmessage) ID() string { return m.id }

// lease starts m's lease, of d.
func (m *gmessage) lease(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deadline = time.Now().Add(d)
	m.expiry = time.AfterFunc(d, m.expire)
}

// take starts a settle of m, or returns driver.ErrLeaseLost when its
// lease ran out, its reader closed or its partition went to another
// member. A settle that fails gives it back (untake).
func (m *gmessage) take() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.lost(); err != nil {
		return err
	}
	m.busy = true
	m.expiry.Stop()
	return nil
}

// lost returns an error wrapping driver.ErrLeaseLost that says why m can
// no longer be settled, or nil. Called with m.mu held.
func (m *gmessage) lost() error {
	switch {
	case m.state != leased || m.busy:
		return driver.ErrLeaseLost
	case m.g.closed():
		return fmt.Errorf("%w: this process's member of consumer group %s closed", driver.ErrLeaseLost, m.g.n.cgroup)
	case !m.g.tr.owned(m.f.part):
		return fmt.Errorf("%w: partition %d of %s was revoked from this member of consumer group %s (a rebalance)",
			driver.ErrLeaseLost, m.f.r.Partition, m.f.r.Topic, m.g.n.cgroup)
	case !time.Now().Before(m.deadline):
		return fmt.Errorf("%w: it ran out %s ago", driver.ErrLeaseLost, time.Since(m.deadline).Round(time.Millisecond))
	}
	return nil
}

// untake ends a settle that failed: the delivery is still leased, until
// its deadline.
func (m *gmessage) untake() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy = false
	m.expiry.Reset(time.Until(m.deadline))
}

// done ends a settle that succeeded: the record is settled in its
// partition, or, when the partition went to another member meanwhile, an
// error wrapping driver.ErrLeaseLost (its next owner delivers it again).
func (m *gmessage) done() error {
	m.mu.Lock()
	m.state, m.busy = settled, false
	m.mu.Unlock()
	if !m.g.settle(m.f) {
		return fmt.Errorf("%w: partition %d of %s was revoked from this member of consumer group %s (a rebalance) while it was settled",
			driver.ErrLeaseLost, m.f.r.Partition, m.f.r.Topic, m.g.n.cgroup)
	}
	return nil
}

// again appends a copy of m's message to the subscription's own log, due
// after delay, with its attempts so far and reason ("" keeps the last).
func (m *gmessage) again(ctx context.Context, delay time.Duration, reason string) error {
	c := copyRecord(m.f.r, m.id, m.g.n.retry)
	set := func(k, v string) { c.Headers = append(c.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	set(logstore.HeaderDelivered, strconv.Itoa(m.attempt))
	if delay > 0 {
		set(logstore.HeaderDue, strconv.FormatInt(time.Now().Add(delay).UnixNano(), 10))
	}
	if reason != "" {
		set(logstore.HeaderError, logstore.EscapeReason(reason, logstore.MaxReasonLen))
	} else if last := get(m.f.r, logstore.HeaderError); last != "" {
		set(logstore.HeaderError, last)
	}
	return m.g.s.st.s.produce(ctx, c)
}

// kill makes m's message dead with reason ("" keeps the last).
func (m *gmessage) kill(ctx context.Context, reason string) error {
	if reason == "" {
		reason = logstore.UnescapeReason(get(m.f.r, logstore.HeaderError))
	}
	return m.g.s.kill(ctx, m.g.d, m.f.r, m.id, m.attempt, reason)
}

// expire ends the lease: in the background, the message is appended again
// (or made dead after its last attempt) and the record settled, tried
// again until it succeeds, the reader closes or the partition goes to
// another member.
func (m *gmessage) expire() {
	m.mu.Lock()
	if m.state != leased || m.busy {
		m.mu.Unlock()
		return
	}
	m.state = lost
	m.mu.Unlock()
	g := m.g
	store := g.s.st.s
	store.goBackground(func() {
		for g.ctx.Err() == nil && g.tr.owned(m.f.part) {
			err := m.redeliver()
			if err == nil {
				return
			}
			store.opts.Logger.Error("kafkapubsub: giving back a message whose lease ran out failed; retrying",
				"topic", g.s.st.name, "subscription", g.s.name, "message_id", m.id, "error", err)
			select {
			case <-time.After(retryWait):
			case <-g.ctx.Done():
			}
		}
	})
}

// redeliver appends m's message again, due now, or makes it dead after
// its last attempt, then settles its record.
func (m *gmessage) redeliver() error {
	g := m.g
	store := g.s.st.s
	ctx, cancel := context.WithTimeout(g.ctx, store.opts.RequestTimeout)
	defer cancel()
	if m.attempt >= g.s.maxAttempts(g.d) {
		if err := m.g.s.kill(ctx, g.d, m.f.r, m.id, m.attempt, driver.ReasonLeaseExpired); err != nil {
			return err
		}
		g.settle(m.f)
		store.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: g.s.st.name, Subscription: g.s.name,
			MessageID: m.id, Attempt: m.attempt, Err: errors.New(driver.ReasonLeaseExpired)})
		return nil
	}
	if err := m.again(ctx, 0, ""); err != nil {
		return err
	}
	g.settle(m.f)
	return nil
}

// groupAck settles m for good.
func (s *subState) groupAck(m *gmessage) error {
	if err := m.take(); err != nil {
		return err
	}
	return m.done()
}

// groupRetry appends m's message again, due after delay, then settles its
// record.
func (s *subState) groupRetry(ctx context.Context, m *gmessage, delay time.Duration, reason string) error {
	if err := m.take(); err != nil {
		return err
	}
	if err := m.again(ctx, delay, reason); err != nil {
		m.untake()
		return err
	}
	return m.done()
}

// groupDead makes m's message dead, then settles its record.
func (s *subState) groupDead(ctx context.Context, m *gmessage, reason string) error {
	if err := m.take(); err != nil {
		return err
	}
	if err := m.kill(ctx, reason); err != nil {
		m.untake()
		return err
	}
	return m.done()
}

// groupExtend moves m's lease end to now+by.
func (s *subState) groupExtend(m *gmessage, by time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.lost(); err != nil {
		return err
	}
	if !m.expiry.Stop() {
		return driver.ErrLeaseLost // its expiry started
	}
	m.deadline = time.Now().Add(by)
	m.expiry.Reset(by)
	return nil
}
