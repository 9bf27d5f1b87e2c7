package channelpubsub

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Inspection and repair (driver.Peeker, Canceler, DeadDeleter; the store's
// Topics is in store.go). Peek lists each state by ID (the order of enqueue),
// its cursor the last ID listed; it copies and sorts the state's entries, so a
// page costs time in proportion to the messages in that state. Message and
// Cancel look an ID up in each state in turn.

var (
	_ driver.Peeker      = (*subscription)(nil)
	_ driver.Canceler    = (*subscription)(nil)
	_ driver.DeadDeleter = (*subscription)(nil)
)

// liveEntries returns the ready and leased entries, or those of the shard
// of id alone when id is not 0.
func (q *queue) liveEntries(id uint64) []*entry {
	var out []*entry
	for i := range q.live {
		if id != 0 && uint64(i) != id%liveShards {
			continue
		}
		sh := &q.live[i]
		sh.mu.Lock()
		for e := sh.head.next; e != &sh.head; e = e.next {
			out = append(out, e)
		}
		sh.mu.Unlock()
	}
	return out
}

// inState returns the queue's entries in state (all of them, or the one
// of id when id is not 0), as last linked: the caller checks each one's
// state under its lock.
func (q *queue) inState(state admin.MessageState, id uint64) []*entry {
	switch state {
	case admin.StateReady, admin.StateProcessing:
		return q.liveEntries(id)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*entry
	if state == admin.StateScheduled {
		for e := range q.scheduled {
			if id == 0 || e.id == id {
				out = append(out, e)
			}
		}
		return out
	}
	for _, e := range q.dead {
		if id == 0 || e.id == id {
			out = append(out, e)
		}
	}
	return out
}

// stateOf is the inspection state of an entry state.
var stateOf = map[state]admin.MessageState{stReady: admin.StateReady, stScheduled: admin.StateScheduled,
	stProcessing: admin.StateProcessing, stDead: admin.StateDead}

// info describes e if it is in a state inspection shows. Called with e.mu
// held.
func (e *entry) info() (admin.MessageInfo, bool) {
	st, ok := stateOf[e.state]
	if !ok {
		return admin.MessageInfo{}, false
	}
	info := admin.MessageInfo{
		ID: e.ID(), State: st, Attempts: int(e.attempt), CreatedAt: time.Unix(0, e.created),
		LastError: e.lastErr(), Size: len(e.data()), Preview: admin.PreviewOf(e.data()), Header: e.header(),
	}
	switch e.state {
	case stReady:
		info.RunAt = info.CreatedAt
	case stScheduled:
		info.RunAt = e.cold.due
	case stProcessing:
		info.RunAt = time.Unix(0, e.leaseUntil.Load())
	case stDead:
		info.RunAt = e.cold.diedAt
	}
	return info, true
}

// Peek returns a page of the subscription's messages in opts.State, by ID.
func (s *subscription) Peek(_ context.Context, opts admin.PeekOptions) (admin.PeekPage, error) {
	q, err := s.open(false)
	if err != nil {
		return admin.PeekPage{}, err
	}
	var after uint64
	if opts.After != "" {
		if after, err = strconv.ParseUint(opts.After, 10, 64); err != nil {
			return admin.PeekPage{}, fmt.Errorf("%w %q", admin.ErrInvalidCursor, opts.After)
		}
	}
	es := slices.DeleteFunc(q.inState(opts.State, 0), func(e *entry) bool { return e.id <= after })
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	var page admin.PeekPage
	for _, e := range es {
		e.mu.Lock()
		info, ok := e.info()
		e.mu.Unlock()
		if !ok || info.State != opts.State {
			continue // moved on since it was listed
		}
		if len(page.Messages) == opts.Limit {
			page.Next = page.Messages[len(page.Messages)-1].ID
			break
		}
		page.Messages = append(page.Messages, info)
	}
	return page, nil
}

// find returns the entry id of the subscription in a state inspection
// shows, or nil.
func (q *queue) find(id uint64) *entry {
	for _, state := range []admin.MessageState{admin.StateReady, admin.StateProcessing, admin.StateScheduled, admin.StateDead} {
		if es := q.inState(state, id); len(es) > 0 {
			for _, e := range es {
				if e.id == id {
					return e
				}
			}
		}
	}
	return nil
}

// lookupID parses id and finds its entry, or says why it cannot.
func (s *subscription) lookupID(id string) (*queue, *entry, error) {
	q, err := s.open(false)
	if err != nil {
		return nil, nil, err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return nil, nil, admin.ErrInvalidID
	}
	e := q.find(n)
	if e == nil {
		return nil, nil, admin.ErrNotFound
	}
	return q, e, nil
}

// Message returns the message id of the subscription and its data.
func (s *subscription) Message(_ context.Context, id string) (admin.MessageInfo, []byte, error) {
	_, e, err := s.lookupID(id)
	if err != nil {
		return admin.MessageInfo{}, nil, err
	}
	e.mu.Lock()
	info, ok := e.info()
	e.mu.Unlock()
	if !ok {
		return admin.MessageInfo{}, nil, admin.ErrNotFound
	}
	return info, append([]byte{}, e.data()...), nil
}

// Cancel deletes the ready or scheduled message id of the subscription. A
// ready one stays in the channel, taking room, until a Dequeue skips it.
func (s *subscription) Cancel(_ context.Context, id string) error {
	q, e, err := s.lookupID(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case stReady:
		q.dropReady(e)
	case stScheduled:
		if e.cold.timer != nil { // scheduled: cold is made
			e.cold.timer.Stop()
		}
		q.mu.Lock()
		delete(q.scheduled, e)
		q.mu.Unlock()
	case stProcessing, stDead:
		return fmt.Errorf("%w: it is %s", admin.ErrWrongState, stateOf[e.state])
	default:
		return admin.ErrNotFound
	}
	e.state = stCanceled
	q.releaseKey(e)
	return nil
}

// DeleteDead deletes the dead message id of the subscription.
func (s *subscription) DeleteDead(_ context.Context, id string) error {
	q, err := s.open(false)
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return admin.ErrInvalidID
	}
	es := q.takeDead(func(e *entry) bool { return e.id == n })
	if len(es) == 0 {
		return fmt.Errorf("no dead message with that ID: %w", admin.ErrNotFound)
	}
	q.releaseKey(es[0])
	return nil
}
