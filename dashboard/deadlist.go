package dashboard

import (
	"context"
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A backend without a Peeker (NATS, Kafka) may still list its dead
// messages (admin.DeadLetters): the dead list and a dead message's page
// come from admin.ListDead there, one page of at most admin.MaxPeekLimit
// messages, oldest death first.

// errOnePage is the error of a later page of a dead list that has one.
var errOnePage = fmt.Errorf("%w: this backend lists its dead messages in one page", admin.ErrInvalidCursor)

// peek is admin.Peek, falling back to listDead for the dead messages of
// a backend without a Peeker.
func peek(ctx context.Context, t pubsub.Topic, opts admin.PeekOptions) (admin.PeekPage, error) {
	pg, err := admin.Peek(ctx, t, opts)
	if !errors.Is(err, pubsub.ErrUnsupported) || opts.State != admin.StateDead {
		return pg, err
	}
	if opts.After != "" {
		return admin.PeekPage{}, errOnePage
	}
	dead, err := listDead(ctx, t, opts.Limit)
	if err != nil {
		return admin.PeekPage{}, err
	}
	for _, m := range dead {
		pg.Messages = append(pg.Messages, m.Info())
	}
	return pg, nil
}

// getMessage is admin.GetMessage, falling back to the dead messages
// listDead finds on a backend without a Peeker: another message there
// wraps admin.ErrNotFound, saying that only dead ones can be shown.
func getMessage(ctx context.Context, t pubsub.Topic, id string) (admin.MessageInfo, []byte, error) {
	info, data, err := admin.GetMessage(ctx, t, id)
	if !errors.Is(err, pubsub.ErrUnsupported) {
		return info, data, err
	}
	dead, lerr := listDead(ctx, t, admin.MaxPeekLimit)
	if lerr != nil {
		return admin.MessageInfo{}, nil, errors.Join(err, lerr)
	}
	for _, m := range dead {
		if m.ID == id {
			return m.Info(), m.Data, nil
		}
	}
	return admin.MessageInfo{}, nil, fmt.Errorf("%w: %q is not among the first %d dead messages (this backend shows dead messages only)",
		admin.ErrNotFound, id, admin.MaxPeekLimit)
}

// listDead is admin.ListDead, at most admin.MaxPeekLimit messages.
func listDead(ctx context.Context, t pubsub.Topic, limit int) ([]admin.DeadMessage, error) {
	if limit <= 0 || limit > admin.MaxPeekLimit {
		limit = admin.MaxPeekLimit
	}
	return admin.ListDead(ctx, t, limit)
}
