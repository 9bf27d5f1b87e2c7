package event

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Claim makes a listener's effects happen once per event, even when the
// event is delivered again (the idempotent consumer, on the backend's
// inbox: pubsub.Inbox). Call it with the ctx the Service passed to the
// listener, before the effects, and make them only when first is true:
//
//	func (h *Bill) Handle(ctx context.Context, e OrderPlaced) error {
//		return h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//			first, err := event.Claim(ctx, tx)
//			if err != nil || !first {
//				return err // done before: by an earlier delivery
//			}
//			_, err = tx.NewInsert().Model(&Invoice{Order: e.ID}).Exec(ctx)
//			return err
//		})
//	}
//
// Claim records the key (this listener, Meta(ctx).ID) on the Service's
// subscription and reports whether this is the first claim of it there.
// With tx, a transaction of the backend's store (a bun.Tx on dbpubsub), the
// claim is written in tx: it exists exactly when tx commits, with the
// effects it guards. With a nil tx, or on a backend that keeps no store to
// write tx in (channelpubsub), the claim is recorded at once; if the
// listener then returns an error (or panics), the Service releases it, so
// that the redelivery claims anew.
//
// A listener's key is its Go type (%T; "func(pkg.Event)" for ListenFunc),
// with "#2", "#3"... for the second and further listeners of one event
// type with the same name, in registration order: the same in every
// process running the same code. Renaming the type or reordering such
// listeners changes the key, so events in flight at a deploy that does may
// repeat their effects once.
//
// Claim returns ErrOutsideListener for a ctx that is not a running
// listener's, an error wrapping pubsub.ErrUnsupported on a backend without
// an inbox or for a tx of a store it cannot write in (dbpubsub with
// anything but bun's), and pubsub.ErrInvalidKey for a key over
// pubsub.MaxKeyLen (an event ID of some 900 bytes).
func Claim(ctx context.Context, tx any) (first bool, err error) {
	sc, ok := ctx.Value(claimKey{}).(*claimScope)
	if !ok {
		return false, fmt.Errorf("%w: call it with the ctx a Service passed to the listener", ErrOutsideListener)
	}
	if err := sc.add(nil); err != nil { // the listener has returned: claim nothing
		return false, err
	}
	key := sc.l.inboxName + "/" + sc.eventID
	first, release, err := pubsub.Claim(pubsub.WithTx(ctx, tx), sc.svc.topic, key)
	if err != nil {
		return false, fmt.Errorf("event: claim %q on the %s: %w", key, sc.svc.desc, err)
	}
	if !first {
		release = nil // nothing of this call to forget
	}
	if err := sc.add(release); err != nil {
		// The listener returned meanwhile: undo what nobody would release.
		if release != nil {
			err = errors.Join(err, release(context.WithoutCancel(ctx)))
		}
		return false, fmt.Errorf("event: claim %q on the %s: %w", key, sc.svc.desc, err)
	}
	return first, nil
}

type claimKey struct{}

// claimScope is the Claim context of one listener handling one delivery,
// and the ctx the listener gets: its parent with the scope as the value of
// claimKey (context.WithValue's two allocations in one).
type claimScope struct {
	context.Context

	svc     *Service  // its topic is the inbox, its desc names it in errors
	l       *listener // its inboxName names it in keys and errors
	eventID string

	mu       sync.Mutex
	ended    bool
	releases []func(context.Context) error
}

func (sc *claimScope) Value(key any) any {
	if _, ok := key.(claimKey); ok {
		return sc
	}
	return sc.Context.Value(key)
}

func (sc *claimScope) String() string {
	return fmt.Sprintf("%v.WithValue(event.claimKey, %s/%s)", sc.Context, sc.l.inboxName, sc.eventID)
}

// add records release (nil: none), or fails once the listener has
// returned.
func (sc *claimScope) add(release func(context.Context) error) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ended {
		return fmt.Errorf("%w: listener %s had returned from event %s", ErrOutsideListener, sc.l.inboxName, sc.eventID)
	}
	if release != nil {
		sc.releases = append(sc.releases, release)
	}
	return nil
}

// end closes the scope when the listener has returned and, if it failed,
// releases its claims on a ctx of its own (the handler's may have ended),
// newest first.
func (sc *claimScope) end(ctx context.Context, failed bool) error {
	sc.mu.Lock()
	sc.ended = true
	rs := sc.releases
	sc.releases = nil
	sc.mu.Unlock()
	if !failed || len(rs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var errs []error
	for i := len(rs) - 1; i >= 0; i-- {
		if err := rs[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
