// Package minidriver is the smallest driver.Store: the required methods
// only, in memory, one subscription (the default) per topic and none of
// the optional capabilities. It tests the engine against a store that
// lacks every ability, and shows how little a driver must do.
package minidriver

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Store keeps each topic's messages in a slice, scanned by Receive. Make
// it with New.
type Store struct {
	env    driver.Env
	closed chan struct{}

	mu     sync.Mutex
	topics map[string]*topic
	nextID uint64
	wake   chan struct{} // closed and replaced when a message changes
}

var _ driver.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{closed: make(chan struct{}), topics: make(map[string]*topic), wake: make(chan struct{})}
}

// Open keeps env; the store honours no Outgoing field beyond the data.
func (s *Store) Open(env driver.Env) (driver.Features, error) {
	s.env = env
	return 0, nil
}

// Topic returns the topic name, made on first use.
func (s *Store) Topic(name string) driver.Topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		t = &topic{s: s, name: name}
		s.topics[name] = t
	}
	return t
}

// Close ends the calls waiting in Receive.
func (s *Store) Close() error {
	close(s.closed)
	return nil
}

// changed wakes the calls waiting in Receive. Called with s.mu held.
func (s *Store) changed() {
	close(s.wake)
	s.wake = make(chan struct{})
}

type state uint8

const (
	ready state = iota
	leased
	done
	dead
)

type msg struct {
	id         uint64
	data       []byte
	header     pubsub.Header
	state      state
	attempt    int
	token      uint64
	due        time.Time // when ready
	leaseUntil time.Time // when leased
}

func (m *msg) ID() string { return strconv.FormatUint(m.id, 10) }

type topic struct {
	s    *Store
	name string
	msgs []*msg // guarded by s.mu
}

func (t *topic) Publish(_ context.Context, _ <-chan struct{}, o driver.Outgoing) (bool, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.nextID++
	t.msgs = append(t.msgs, &msg{id: t.s.nextID, data: append([]byte{}, o.Data...), header: o.Header, due: time.Now()})
	t.s.changed()
	return true, nil
}

func (t *topic) Subscription(name string) driver.Subscription { return &sub{t: t, name: name} }

type sub struct {
	t    *topic
	name string
}

func (u *sub) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	if u.name != pubsub.DefaultSubscription {
		return pubsub.ErrNoSubscription
	}
	s := u.t.s
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		now := time.Now()
		next := now.Add(time.Hour)
		for _, m := range u.t.msgs {
			if m.state == leased && now.After(m.leaseUntil) {
				u.expire(m, now)
			}
			switch {
			case m.state == ready && !m.due.After(now):
				m.state, m.attempt, m.token = leased, m.attempt+1, m.token+1
				m.leaseUntil = now.Add(s.env.Defaults.Lease)
				*d = driver.Delivery{Msg: m, Token: m.token, Data: m.data, Header: m.header, Attempt: m.attempt}
				s.mu.Unlock()
				return nil
			case m.state == ready && m.due.Before(next):
				next = m.due
			case m.state == leased && m.leaseUntil.Before(next):
				next = m.leaseUntil
			}
		}
		wake := s.wake
		s.mu.Unlock()
		timer := time.NewTimer(time.Until(next) + time.Millisecond)
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
		case <-stop:
			timer.Stop()
			return pubsub.ErrClosed
		case <-s.closed:
			timer.Stop()
			return pubsub.ErrClosed
		}
		timer.Stop()
	}
}

// expire ends m's lease, which ran out: m is ready again, or dead on its
// last attempt. Called with s.mu held.
func (u *sub) expire(m *msg, now time.Time) {
	if u.t.s.env.Defaults.Retry.Exhausted(m.attempt) {
		m.state = dead
		u.t.s.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: u.t.name, Subscription: u.name,
			MessageID: m.ID(), Attempt: m.attempt, Err: fmt.Errorf("%s", driver.ReasonLeaseExpired), Time: now})
		return
	}
	m.state, m.due = ready, now
}

// fenced runs f on d's message if d still holds its lease.
func (u *sub) fenced(d *driver.Delivery, f func(m *msg, now time.Time)) error {
	m := d.Msg.(*msg)
	s := u.t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if m.state != leased || m.token != d.Token || now.After(m.leaseUntil) {
		return driver.ErrLeaseLost
	}
	f(m, now)
	s.changed()
	return nil
}

func (u *sub) Ack(_ context.Context, d *driver.Delivery) error {
	return u.fenced(d, func(m *msg, _ time.Time) { m.state = done })
}

func (u *sub) Retry(_ context.Context, d *driver.Delivery, delay time.Duration, _ string) error {
	return u.fenced(d, func(m *msg, now time.Time) { m.state, m.due = ready, now.Add(delay) })
}

func (u *sub) Dead(_ context.Context, d *driver.Delivery, _ string) error {
	return u.fenced(d, func(m *msg, _ time.Time) { m.state = dead })
}

func (u *sub) Extend(_ context.Context, d *driver.Delivery, by time.Duration) error {
	return u.fenced(d, func(m *msg, now time.Time) { m.leaseUntil = now.Add(by) })
}
