package channelpubsub

import (
	"context"
	"sync"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Inbox = (*subscription)(nil)

// Claim records key in the inbox of the handle's subscription and reports
// whether it is the first claim of key there (see pubsub.Inbox). Memory
// takes part in no transaction: the claim is recorded at once, even when
// ctx carries one (pubsub.WithTx), and release forgets it, so that a
// redelivery claims anew; the release of a claim that was not the first
// does nothing. Claims are kept until released or until their
// subscription is deleted.
func (s *subscription) Claim(_ context.Context, key string) (bool, func(context.Context) error, error) {
	q, err := s.open(false)
	if err != nil {
		return false, nil, err
	}
	first, release := q.inbox.claim(key)
	return first, release, nil
}

// inbox is the keys a subscription's consumers claimed.
type inbox struct {
	mu     sync.Mutex
	claims map[string]uint64 // key → the claim holding it
	last   uint64            // the last claim made
}

// claim records key unless it is claimed, and returns the release of the
// claim: it forgets key if this claim still holds it.
func (in *inbox) claim(key string) (bool, func(context.Context) error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, taken := in.claims[key]; taken {
		return false, noRelease
	}
	if in.claims == nil {
		in.claims = make(map[string]uint64)
	}
	in.last++
	id := in.last
	in.claims[key] = id
	return true, func(context.Context) error {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.claims[key] == id {
			delete(in.claims, key)
		}
		return nil
	}
}

func noRelease(context.Context) error { return nil }
