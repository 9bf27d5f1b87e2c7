package admin

import (
	"context"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// DeadLetters is a pubsub.Topic whose dead messages can be listed, re-queued
// and purged.
type DeadLetters interface {
	// ListDead returns up to limit dead messages (all when limit <= 0),
	// oldest death first.
	ListDead(ctx context.Context, limit int) ([]DeadMessage, error)
	// RequeueDead makes the dead message id ready again with a fresh
	// attempt count. It wraps ErrNotFound when id is not dead, and
	// ErrInvalidID too when id cannot be a message ID.
	RequeueDead(ctx context.Context, id string) error
	// RequeueAllDead re-queues every dead message and says how many.
	RequeueAllDead(ctx context.Context) (int, error)
	// PurgeDead deletes every dead message for good and says how many.
	PurgeDead(ctx context.Context) (int, error)
}

// DeadMessage is a message that exhausted its attempts or was rejected.
type DeadMessage struct {
	ID        string
	Data      []byte
	Attempts  int           // deliveries it had
	LastError string        // the reason of its last failure, if one was given
	DiedAt    time.Time     // when it became dead
	Header    pubsub.Header // its header (nil if it has none); the caller's to keep
}

// Info is m as Peek and GetMessage describe a message: dead, its death
// time as RunAt. A tool shows the dead messages of a backend without a
// Peeker so.
func (m DeadMessage) Info() MessageInfo {
	return MessageInfo{ID: m.ID, State: StateDead, Attempts: m.Attempts, RunAt: m.DiedAt, LastError: m.LastError,
		Size: len(m.Data), Preview: PreviewOf(m.Data), Header: m.Header}
}

// ListDead lists up to limit dead messages of t.
func ListDead(ctx context.Context, t pubsub.Topic, limit int) ([]DeadMessage, error) {
	d, ok := pubsub.As[DeadLetters](t)
	if !ok {
		return nil, unsupported(t, "dead letters")
	}
	return d.ListDead(ctx, limit)
}

// RequeueDead makes the dead message id of t ready again.
func RequeueDead(ctx context.Context, t pubsub.Topic, id string) error {
	d, ok := pubsub.As[DeadLetters](t)
	if !ok {
		return unsupported(t, "dead letters")
	}
	return d.RequeueDead(ctx, id)
}

// RequeueAllDead makes every dead message of t ready again.
func RequeueAllDead(ctx context.Context, t pubsub.Topic) (int, error) {
	d, ok := pubsub.As[DeadLetters](t)
	if !ok {
		return 0, unsupported(t, "dead letters")
	}
	return d.RequeueAllDead(ctx)
}

// PurgeDead deletes every dead message of t.
func PurgeDead(ctx context.Context, t pubsub.Topic) (int, error) {
	d, ok := pubsub.As[DeadLetters](t)
	if !ok {
		return 0, unsupported(t, "dead letters")
	}
	return d.PurgeDead(ctx)
}
