package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The optional abilities of a handle: each checks the handle, calls the
// store's capability, and words its error; without the capability it
// returns pubsub.ErrUnsupported (and pubsub.As does not find it, see
// topic.Forwards).

var (
	_ admin.DeadLetters = (*topic)(nil)
	_ admin.Stater      = (*topic)(nil)
	_ admin.Peeker      = (*topic)(nil)
	_ admin.Canceler    = (*topic)(nil)
	_ admin.DeadDeleter = (*topic)(nil)
	_ admin.Pauser      = (*topic)(nil)
	_ admin.AckCounter  = (*topic)(nil)
	_ pubsub.Inbox      = (*topic)(nil)
)

// ListDead returns up to limit dead messages (all if limit <= 0), oldest
// death first.
func (t *topic) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	if err := t.able(t.caps.dead != nil, "dead letters"); err != nil {
		return nil, err
	}
	ds, err := t.caps.dead.ListDead(ctx, limit)
	return ds, t.wrap(ctx, "list dead", err)
}

// RequeueDead makes the dead message id ready again with a fresh attempt count.
func (t *topic) RequeueDead(ctx context.Context, id string) error {
	if err := t.able(t.caps.dead != nil, "dead letters"); err != nil {
		return err
	}
	return t.wrapID(ctx, "requeue", id, t.caps.dead.RequeueDead(ctx, id))
}

// RequeueAllDead makes every dead message ready again.
func (t *topic) RequeueAllDead(ctx context.Context) (int, error) {
	if err := t.able(t.caps.dead != nil, "dead letters"); err != nil {
		return 0, err
	}
	n, err := t.caps.dead.RequeueAllDead(ctx)
	return n, t.wrap(ctx, "requeue all dead", err)
}

// PurgeDead deletes every dead message.
func (t *topic) PurgeDead(ctx context.Context) (int, error) {
	if err := t.able(t.caps.dead != nil, "dead letters"); err != nil {
		return 0, err
	}
	n, err := t.caps.dead.PurgeDead(ctx)
	return n, t.wrap(ctx, "purge dead", err)
}

// Stats counts the subscription's messages.
func (t *topic) Stats(ctx context.Context) (admin.Stats, error) {
	if err := t.able(t.caps.stats != nil, "stats"); err != nil {
		return admin.Stats{}, err
	}
	s, err := t.caps.stats.Stats(ctx)
	return s, t.wrap(ctx, "stats", err)
}

// Peek returns a page of the subscription's messages in opts.State.
func (t *topic) Peek(ctx context.Context, opts admin.PeekOptions) (admin.PeekPage, error) {
	if err := t.able(t.caps.peek != nil, "peek"); err != nil {
		return admin.PeekPage{}, err
	}
	opts, err := opts.Normalized()
	if err != nil {
		return admin.PeekPage{}, err
	}
	p, err := t.caps.peek.Peek(ctx, opts)
	return p, t.wrap(ctx, fmt.Sprintf("peek %s messages", opts.State), err)
}

// Message returns the message id of the subscription and its data.
func (t *topic) Message(ctx context.Context, id string) (admin.MessageInfo, []byte, error) {
	if err := t.able(t.caps.peek != nil, "peek"); err != nil {
		return admin.MessageInfo{}, nil, err
	}
	info, data, err := t.caps.peek.Message(ctx, id)
	return info, data, t.wrapID(ctx, "message", id, err)
}

// Cancel deletes the ready or scheduled message id of the subscription.
func (t *topic) Cancel(ctx context.Context, id string) error {
	if err := t.able(t.caps.cancel != nil, "cancel"); err != nil {
		return err
	}
	return t.wrapID(ctx, "cancel", id, t.caps.cancel.Cancel(ctx, id))
}

// DeleteDead deletes the dead message id of the subscription.
func (t *topic) DeleteDead(ctx context.Context, id string) error {
	if err := t.able(t.caps.delDead != nil, "deleting one dead message"); err != nil {
		return err
	}
	return t.wrapID(ctx, "delete dead", id, t.caps.delDead.DeleteDead(ctx, id))
}

// Pause pauses the handle's subscription (see admin.Pauser).
func (t *topic) Pause(ctx context.Context) error {
	if err := t.pausable(ctx); err != nil {
		return err
	}
	return t.wrap(ctx, "pause", t.caps.pause.Pause(ctx))
}

// Resume resumes the handle's subscription.
func (t *topic) Resume(ctx context.Context) error {
	if err := t.pausable(ctx); err != nil {
		return err
	}
	return t.wrap(ctx, "resume", t.caps.pause.Resume(ctx))
}

// Paused reports whether the handle's subscription is paused.
func (t *topic) Paused(ctx context.Context) (bool, error) {
	if err := t.pausable(ctx); err != nil {
		return false, err
	}
	on, err := t.caps.pause.Paused(ctx)
	return on, t.wrap(ctx, "paused", err)
}

func (t *topic) pausable(ctx context.Context) error {
	if err := t.able(t.caps.pause != nil, "pause"); err != nil {
		return err
	}
	return ctx.Err()
}

// AckedSince counts the acks of the handle's subscription at or after
// since (see admin.AckCounter).
func (t *topic) AckedSince(ctx context.Context, since time.Time) (int64, error) {
	if err := t.able(t.caps.acks != nil, "counting acks"); err != nil {
		return 0, err
	}
	n, err := t.caps.acks.AckedSince(ctx, since)
	return n, t.wrap(ctx, "count acks", err)
}

// Claim records key in the inbox of the handle's subscription and reports
// whether it is the first claim of key there (see pubsub.Inbox).
func (t *topic) Claim(ctx context.Context, key string) (bool, func(context.Context) error, error) {
	if err := t.able(t.caps.inbox != nil, "inbox"); err != nil {
		return false, nil, err
	}
	if err := pubsub.ValidateKey(key); err != nil {
		return false, nil, fmt.Errorf("%s: claim on %s: %w", t.ps.name, t.label, err)
	}
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	first, release, err := t.caps.inbox.Claim(ctx, key)
	return first, release, t.wrap(ctx, "claim", err)
}

// able fails when the store lacks the capability what, or the handle is
// closed.
func (t *topic) able(has bool, what string) error {
	if !has {
		return t.ps.unsupported(what)
	}
	return t.check()
}

// wrapID is wrap for an op on the message id.
func (t *topic) wrapID(ctx context.Context, op, id string, err error) error {
	if err == nil {
		return nil
	}
	return t.wrap(ctx, fmt.Sprintf("%s %q", op, id), err)
}
