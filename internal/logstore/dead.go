package logstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// ErrGone is returned by a DeadLog's Remove when the record is no longer
// kept: another call re-queued, deleted or purged it, or its retention
// ran out.
var ErrGone = errors.New("logstore: dead record gone")

// DeadRecord is one record of a subscription's dead log.
type DeadRecord struct {
	admin.DeadMessage
	// Pos is its place in the dead log: increasing in the order records
	// were appended, never reused within one log.
	Pos uint64
}

// DeadLog is what a store supplies for the dead letters of one
// subscription. Its methods wrap the store's errors with what was being
// done, and return ctx's error when ctx ended.
type DeadLog interface {
	// Scan calls each for the subscription's dead records, oldest
	// first, until it returns false. A log that does not exist has none.
	Scan(ctx context.Context, each func(DeadRecord) bool) error
	// Has reports whether the record at pos is still kept.
	Has(ctx context.Context, pos uint64) (bool, error)
	// Remove deletes the record at pos, or returns an error wrapping
	// ErrGone when it was not kept.
	Remove(ctx context.Context, pos uint64) error
	// Purge deletes the subscription's records up to and including pos;
	// one appended after pos stays.
	Purge(ctx context.Context, through uint64) error
	// Subscribed returns nil when the subscription exists, else an error
	// wrapping pubsub.ErrNoSubscription.
	Subscribed(ctx context.Context) error
	// Requeue appends r's message to the subscription's own log, for it
	// alone, ready now, with its ID, data and header and a fresh attempt
	// count. key is the same for every requeue of r and differs for any
	// other record: a store that de-duplicates appends keeps one copy
	// per key.
	Requeue(ctx context.Context, r DeadRecord, key string) error
}

// AtomicRequeuer is a DeadLog that appends a requeue and removes its
// record in one step, which at most one of concurrent requeues of one
// record passes: a store that cannot remove one record atomically (Kafka
// removes by appending a tombstone) makes both appends in a transaction.
// DeadLetters then calls RequeueRemove instead of Requeue and Remove.
type AtomicRequeuer interface {
	// RequeueRemove is Requeue and Remove at once: an error wrapping
	// ErrGone when the record was not kept (another requeue or removal
	// took it first), and then nothing appended.
	RequeueRemove(ctx context.Context, r DeadRecord, key string) error
}

// DeadLetters is the dead-letter ability of a subscription on a log store
// (driver.DeadLetters and driver.DeadDeleter), over the store's DeadLog.
type DeadLetters struct {
	Log DeadLog
	// ValidID reports whether id can be a message ID of the store.
	ValidID func(id string) bool
}

var (
	_ driver.DeadLetters = DeadLetters{}
	_ driver.DeadDeleter = DeadLetters{}
)

// ListDead returns up to limit dead messages of the subscription (all when
// limit <= 0), oldest death first.
func (dl DeadLetters) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	var out []admin.DeadMessage
	err := dl.Log.Scan(ctx, func(r DeadRecord) bool {
		out = append(out, r.DeadMessage)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// find returns the dead record of message id, nil if none.
func (dl DeadLetters) find(ctx context.Context, id string) (*DeadRecord, error) {
	var found *DeadRecord
	err := dl.Log.Scan(ctx, func(r DeadRecord) bool {
		if r.ID == id {
			found = &r
		}
		return found == nil
	})
	return found, err
}

// RequeueDead makes the dead message id ready again for the subscription,
// with a fresh attempt count and the same ID. It wraps admin.ErrNotFound
// when id is not dead there, and admin.ErrInvalidID too when id cannot be
// a message ID.
func (dl DeadLetters) RequeueDead(ctx context.Context, id string) error {
	if !dl.ValidID(id) {
		return fmt.Errorf("%w (%w)", admin.ErrInvalidID, admin.ErrNotFound)
	}
	r, err := dl.find(ctx, id)
	if err != nil {
		return err
	}
	if r == nil {
		return admin.ErrNotFound
	}
	return dl.requeue(ctx, *r)
}

// requeue appends r to the subscription's log, then removes it from the
// dead log: a failure between the two leaves it both ready and dead,
// never neither. Every requeue of r has the same key (RequeueKey), so a
// store that de-duplicates keeps one copy for concurrent ones, or one
// retried after a lost reply; the remove decides which requeue
// succeeded, and the others wrap admin.ErrNotFound. A requeue that finds
// the record gone before it appends appends nothing.
func (dl DeadLetters) requeue(ctx context.Context, r DeadRecord) error {
	if err := dl.Log.Subscribed(ctx); err != nil {
		return err
	}
	if ok, err := dl.Log.Has(ctx, r.Pos); err != nil || !ok {
		if err == nil {
			err = requeueGone()
		}
		return err
	}
	if a, ok := dl.Log.(AtomicRequeuer); ok {
		if err := a.RequeueRemove(ctx, r, RequeueKey(r)); err != nil {
			if errors.Is(err, ErrGone) {
				return requeueGone()
			}
			return err
		}
		return nil
	}
	if err := dl.Log.Requeue(ctx, r, RequeueKey(r)); err != nil {
		return err
	}
	if err := dl.Log.Remove(ctx, r.Pos); err != nil {
		if errors.Is(err, ErrGone) {
			return requeueGone()
		}
		return err
	}
	return nil
}

// RequeueKey is the key of every requeue of dead record r: its place in
// the dead log and the time it died, which tell it from a record of a log
// made again.
func RequeueKey(r DeadRecord) string {
	return fmt.Sprintf("%d:%d:requeue", r.Pos, r.DiedAt.UnixNano())
}

// requeueGone is the error of a requeue of a record another requeue (or a
// delete, a purge, the retention) took from the dead log first.
func requeueGone() error {
	return fmt.Errorf("%w (re-queued or deleted meanwhile)", admin.ErrNotFound)
}

// RequeueAllDead re-queues every dead message of the subscription and
// says how many; one another call re-queued or deleted meanwhile is not
// counted.
func (dl DeadLetters) RequeueAllDead(ctx context.Context) (int, error) {
	var all []DeadRecord
	if err := dl.Log.Scan(ctx, func(r DeadRecord) bool { all = append(all, r); return true }); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range all {
		err := dl.requeue(ctx, r)
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
// says how many; one dying meanwhile stays.
func (dl DeadLetters) PurgeDead(ctx context.Context) (int, error) {
	var n int
	var last uint64
	if err := dl.Log.Scan(ctx, func(r DeadRecord) bool { n++; last = r.Pos; return true }); err != nil || n == 0 {
		return 0, err
	}
	if err := dl.Log.Purge(ctx, last); err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteDead deletes the dead message id of the subscription for good.
func (dl DeadLetters) DeleteDead(ctx context.Context, id string) error {
	if !dl.ValidID(id) {
		return admin.ErrInvalidID
	}
	r, err := dl.find(ctx, id)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("no dead message with that ID: %w", admin.ErrNotFound)
	}
	if err := dl.Log.Remove(ctx, r.Pos); err != nil {
		if errors.Is(err, ErrGone) {
			return admin.ErrNotFound
		}
		return err
	}
	return nil
}

// DeadFields calls set with the headers conveyor keeps on a dead record
// of message id, beside its pubsub.Header (UserKey): its ID, its attempts,
// and reason (escaped, cut at MaxReasonLen) unless empty.
func DeadFields(set func(k, v string), id string, attempts int, reason string) {
	set(HeaderID, id)
	set(HeaderAttempts, strconv.Itoa(attempts))
	if reason != "" {
		set(HeaderError, EscapeReason(reason, MaxReasonLen))
	}
}

// ParseDead reads a dead record of the dead log at pos, stored at diedAt,
// whose headers get reads and whose message's header is h.
func ParseDead(get func(k string) string, pos uint64, data []byte, h pubsub.Header, diedAt time.Time) DeadRecord {
	r := DeadRecord{Pos: pos, DeadMessage: admin.DeadMessage{ID: get(HeaderID), Data: data, DiedAt: diedAt, Header: h}}
	r.Attempts, _ = strconv.Atoi(get(HeaderAttempts))
	r.LastError = UnescapeReason(get(HeaderError))
	return r
}
