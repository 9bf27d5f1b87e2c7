package natspubsub

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Inspection (admin.TopicLister, DeadDeleter). The topics are the
// streams of this prefix, named by their descriptions; the dead messages
// are kept one per message of the dead-letter stream, so one can be
// deleted by its sequence. Peeker and Canceler are not offered: the
// server does not list a consumer's unacknowledged messages (so the
// processing state cannot be peeked), and a topic's stream is shared by
// its subscriptions, so deleting a waiting message would cancel it for
// every subscription, not the one asked.

var (
	_ driver.TopicLister = (*store)(nil)
	_ driver.DeadDeleter = (*subState)(nil)
)

// Topics returns every topic whose stream exists under this PubSub's
// prefix, with its subscriptions (each stream's consumers but the reserve).
func (ps *store) Topics(ctx context.Context) ([]admin.TopicInfo, error) {
	rctx, cancel := ps.request(ctx)
	defer cancel()
	prefix := ps.opts.Prefix + "_t_"
	var names []string
	list := ps.js.ListStreams(rctx, jetstream.WithStreamListSubject(ps.opts.Prefix+".t.>"))
	for info := range list.Info() {
		name := info.Config.Description
		if strings.HasPrefix(info.Config.Name, prefix) && info.Config.Name == topicNames(ps.opts.Prefix, name).stream {
			names = append(names, name)
		}
	}
	if err := list.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, ps.fail(ctx, "listing streams", err)
	}
	out := make([]admin.TopicInfo, 0, len(names))
	for _, name := range names {
		subs, err := ps.Subscriptions(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, admin.TopicInfo{Name: name, Subscriptions: subs})
	}
	slices.SortFunc(out, func(a, b admin.TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// validID reports whether id can be a message ID of natspubsub: a NUID,
// perhaps with a copy's suffix, or "seq-" and a stream sequence.
func validID(id string) bool {
	return id != "" && strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-") == ""
}
