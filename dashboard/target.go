package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// errUnknown is a topic or subscription the backend does not keep: 404.
var errUnknown = errors.New("dashboard: unknown topic or subscription")

// target is one subscription of one topic: what the topic pages act on.
type target struct {
	Topic string
	Sub   string
}

// path is the target's page path, below the prefix.
func (t target) path() string {
	return "/topics/" + url.PathEscape(t.Topic) + "/" + url.PathEscape(t.Sub) + "/"
}

// topics returns the topics shown, sorted by name: the backend's
// (admin.TopicLister) and Options.Topics, each with its subscriptions (a
// topic with none lists its default one).
func (d *Dashboard) topics(ctx context.Context) ([]admin.TopicInfo, error) {
	ts, err := admin.ListTopics(ctx, d.ps)
	if err != nil && !errors.Is(err, pubsub.ErrUnsupported) {
		return nil, err
	}
	for _, name := range d.opts.Topics {
		if slices.ContainsFunc(ts, func(t admin.TopicInfo) bool { return t.Name == name }) {
			continue
		}
		subs, err := admin.ListSubscriptions(ctx, d.ps, name)
		if err != nil && !errors.Is(err, pubsub.ErrUnsupported) {
			return nil, err
		}
		ts = append(ts, admin.TopicInfo{Name: name, Subscriptions: subs})
	}
	slices.SortFunc(ts, func(a, b admin.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	for i := range ts {
		if len(ts[i].Subscriptions) == 0 {
			ts[i].Subscriptions = []string{pubsub.DefaultSubscription}
		}
	}
	return ts, nil
}

// handle returns a handle on tg, after checking that it is shown (topics):
// a mistyped name in a URL is reported, never created. The caller closes
// it.
// open returns a handle on tg for the request r and the context of its
// backend calls (bounded by Options.Timeout); done closes the one and
// cancels the other. When tg cannot be opened, it answers the error page
// and returns ok false.
func (d *Dashboard) open(w http.ResponseWriter, r *http.Request, tg target) (ctx context.Context, t pubsub.Topic, done func(), ok bool) {
	ctx, cancel := d.callCtx(r)
	t, err := d.handle(ctx, tg)
	if err != nil {
		cancel()
		d.failErr(w, r, err)
		return nil, nil, nil, false
	}
	return ctx, t, func() { _ = t.Close(); cancel() }, true
}

func (d *Dashboard) handle(ctx context.Context, tg target) (pubsub.Topic, error) {
	if err := pubsub.ValidateSubscription(tg.Topic, tg.Sub); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnknown, err)
	}
	ts, err := d.topics(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(ts, func(t admin.TopicInfo) bool { return t.Name == tg.Topic })
	switch {
	case i < 0:
		return nil, fmt.Errorf("%w: no topic %q", errUnknown, tg.Topic)
	case !slices.Contains(ts[i].Subscriptions, tg.Sub):
		return nil, fmt.Errorf("%w: topic %q has no subscription %q", errUnknown, tg.Topic, tg.Sub)
	}
	return d.listed(ctx, tg)
}

// listed returns a handle on tg, one of the subscriptions topics listed:
// the default one without declaring it, another through Subscribe, which
// finds it.
func (d *Dashboard) listed(ctx context.Context, tg target) (pubsub.Topic, error) {
	if tg.Sub == pubsub.DefaultSubscription {
		return d.ps.Topic(tg.Topic), nil
	}
	return pubsub.Subscribe(ctx, d.ps, tg.Topic, tg.Sub)
}
