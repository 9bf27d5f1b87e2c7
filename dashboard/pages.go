package dashboard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/internal/timefmt"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The pages that only read: the overview, a subscription's messages by
// state, and one message.

// overviewRow is one subscription of the overview.
type overviewRow struct {
	Topic, Sub, URL string
	Stats           admin.Stats
	Err             string // why its counts are missing
	NotCounted      bool   // the backend does not count its messages (no admin.Stater)
	State           string // running, paused, or "" when the backend cannot pause
	Chart           *chart
}

// overview serves GET /: every topic's subscriptions with their counts,
// the age of their oldest ready message and their recent throughput.
func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := d.callCtx(r)
	defer cancel()
	var data struct {
		Rows []overviewRow
		Err  string
		Span string
	}
	if d.sampler != nil {
		data.Span = timefmt.Age(d.opts.History)
	}
	ts, err := d.topics(ctx)
	if err != nil {
		data.Err = "The topics could not be listed: " + err.Error()
	}
	for _, ti := range ts {
		for _, sub := range ti.Subscriptions {
			if len(data.Rows) == maxSampled {
				data.Err = fmt.Sprintf("Only the first %d subscriptions are shown.", maxSampled)
				break
			}
			data.Rows = append(data.Rows, d.overviewRow(r, target{Topic: ti.Name, Sub: sub}))
		}
	}
	if err == nil && len(ts) == 0 && !canList(d.ps) {
		data.Err = "This backend cannot list its topics: name them in the dashboard's Options.Topics."
	}
	refresh, _ := strconv.Atoi(r.URL.Query().Get("refresh"))
	d.render(w, r, http.StatusOK, "overview", page{Title: "Topics", Refresh: min(max(refresh, 0), 3600), Data: data})
}

// overviewRow reads the counts and the pause of tg, a subscription the
// overview's topics listed.
func (d *Dashboard) overviewRow(r *http.Request, tg target) overviewRow {
	ctx, cancel := d.callCtx(r)
	defer cancel()
	row := overviewRow{Topic: tg.Topic, Sub: tg.Sub, URL: d.url(tg.path())}
	if d.sampler != nil {
		row.Chart = d.sampler.chart(tg)
	}
	t, err := d.listed(ctx, tg)
	if err != nil {
		row.Err = err.Error()
		return row
	}
	defer t.Close()
	row.Stats, err = admin.TopicStats(ctx, t)
	switch {
	case errors.Is(err, pubsub.ErrUnsupported):
		row.NotCounted = true
	case err != nil:
		row.Err = err.Error()
	}
	row.State = pauseState(ctx, t)
	return row
}

// pauseState says whether t is paused: "paused", "running", or "" when
// the backend cannot pause or could not say.
func pauseState(ctx context.Context, t pubsub.Topic) string {
	switch paused, err := admin.IsPaused(ctx, t); {
	case err != nil:
		return ""
	case paused:
		return "paused"
	}
	return "running"
}

func canList(ps pubsub.PubSub) bool {
	_, ok := pubsub.As[admin.TopicLister](ps)
	return ok
}

// crumbs are the breadcrumbs of tg's pages.
func crumbs(d *Dashboard, tg target) []link {
	return []link{{Name: tg.Topic + " · " + tg.Sub, URL: d.url(tg.path())}}
}

// messageRow is one message of a list.
type messageRow struct {
	ID, URL, Time, Preview, LastError string
	Attempts, Size                    int
	Actions                           []link
}

// messages serves GET /topics/{topic}/{sub}/: the subscription's messages
// in one state (?state=, ready by default), a page at a time (?after=,
// ?limit=); ?id= goes to that message's page.
func (d *Dashboard) messages(w http.ResponseWriter, r *http.Request) {
	tg := target{Topic: r.PathValue("topic"), Sub: r.PathValue("sub")}
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		http.Redirect(w, r, d.url(tg.path()+"messages/"+url.PathEscape(id)), http.StatusSeeOther)
		return
	}
	state := admin.MessageState(q.Get("state"))
	if state == "" {
		state = admin.StateReady
	}
	if !state.Valid() {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("no message state %q: want ready, scheduled, processing or dead", state))
		return
	}
	limit := admin.DefaultPeekLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > admin.MaxPeekLimit {
			d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("limit %q: want a number of messages from 1 to %d", s, admin.MaxPeekLimit))
			return
		}
		limit = n
	}
	ctx, t, done, ok := d.open(w, r, tg)
	if !ok {
		return
	}
	defer done()

	type messagesPage struct {
		Topic, Sub, URL, State, TimeColumn, Next, PauseState, Err, SearchID string
		PauseAction                                                         *link
		Tabs, BulkActions                                                   []link
		Messages                                                            []messageRow
	}
	p := messagesPage{Topic: tg.Topic, Sub: tg.Sub, URL: d.url(tg.path()), State: string(state), TimeColumn: timeLabel(state)}
	stats, statsErr := admin.TopicStats(ctx, t)
	for _, s := range []admin.MessageState{admin.StateReady, admin.StateScheduled, admin.StateProcessing, admin.StateDead} {
		n := int64(-1)
		if statsErr == nil {
			n = map[admin.MessageState]int64{admin.StateReady: stats.Ready, admin.StateScheduled: stats.Scheduled,
				admin.StateProcessing: stats.Processing, admin.StateDead: stats.Dead}[s]
		}
		p.Tabs = append(p.Tabs, link{Name: string(s), URL: p.URL + "?state=" + string(s), Count: n, Current: s == state})
	}
	switch p.PauseState = pauseState(ctx, t); p.PauseState {
	case "paused":
		p.PauseState = "Paused: no consumer gets its messages."
		p.PauseAction = new(d.actionLink(actions["resume"], tg, ""))
	case "running":
		p.PauseState = "Running."
		p.PauseAction = new(d.actionLink(actions["pause"], tg, ""))
	}
	pg, err := admin.Peek(ctx, t, admin.PeekOptions{State: state, Limit: limit, After: q.Get("after")})
	switch {
	case errors.Is(err, admin.ErrInvalidCursor):
		d.failErr(w, r, err)
		return
	case errors.Is(err, pubsub.ErrUnsupported):
		p.Err = "This backend cannot list its messages."
	case err != nil:
		p.Err = "The messages could not be listed: " + err.Error()
	}
	// Without counts (no admin.Stater), the list says whether any is dead.
	if state == admin.StateDead && (stats.Dead > 0 || errors.Is(statsErr, pubsub.ErrUnsupported) && len(pg.Messages) > 0) {
		p.BulkActions = []link{d.actionLink(actions["requeue-all"], tg, ""), d.actionLink(actions["purge-all"], tg, "")}
	}
	now := time.Now()
	for _, m := range pg.Messages {
		p.Messages = append(p.Messages, messageRow{ID: m.ID, URL: p.URL + "messages/" + url.PathEscape(m.ID),
			Time: formatTime(m.RunAt, now), Preview: preview(m.Preview, m.Size), LastError: m.LastError,
			Attempts: m.Attempts, Size: m.Size, Actions: d.messageActions(tg, m)})
	}
	if pg.Next != "" {
		p.Next = p.URL + "?" + url.Values{"state": {string(state)}, "after": {pg.Next}, "limit": {strconv.Itoa(limit)}}.Encode()
	}
	d.render(w, r, http.StatusOK, "messages", page{Title: tg.Topic + " · " + string(state), Crumbs: crumbs(d, tg),
		Flash: doneNote(q), Data: p})
}

// messageActions are the actions on message m in its state.
func (d *Dashboard) messageActions(tg target, m admin.MessageInfo) []link {
	switch m.State {
	case admin.StateDead:
		return []link{d.actionLink(actions["requeue"], tg, m.ID), d.actionLink(actions["purge"], tg, m.ID)}
	case admin.StateReady, admin.StateScheduled:
		return []link{d.actionLink(actions["cancel"], tg, m.ID)}
	}
	return nil
}

// timeLabel names a state's MessageInfo.RunAt.
func timeLabel(s admin.MessageState) string {
	switch s {
	case admin.StateProcessing:
		return "Lease until"
	case admin.StateDead:
		return "Died at"
	}
	return "Due at"
}

// headerEntry is one entry of a message's header, in key order.
type headerEntry struct{ Key, Value string }

// message serves GET /topics/{topic}/{sub}/messages/{id}: one message,
// its header and its data (the first MaxDataShown bytes).
func (d *Dashboard) message(w http.ResponseWriter, r *http.Request) {
	tg := target{Topic: r.PathValue("topic"), Sub: r.PathValue("sub")}
	id := r.PathValue("id")
	if len(id) > maxIDLen {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("the message id is %d bytes long, more than any backend's (%d)", len(id), maxIDLen))
		return
	}
	ctx, t, done, ok := d.open(w, r, tg)
	if !ok {
		return
	}
	defer done()
	info, data, err := admin.GetMessage(ctx, t, id)
	if err != nil {
		d.failErr(w, r, fmt.Errorf("message %q of %s: %w", id, tg.words(), err))
		return
	}
	var p struct {
		Topic, Sub, Back, TimeLabel, Time, Created, Data, Format string
		Info                                                     admin.MessageInfo
		Header                                                   []headerEntry
		Truncated                                                bool
		Shown                                                    int
		Actions                                                  []link
	}
	now := time.Now()
	p.Topic, p.Sub, p.Info = tg.Topic, tg.Sub, info
	p.Back = d.url(tg.path()) + "?state=" + string(info.State)
	p.TimeLabel, p.Time = timeLabel(info.State), formatTime(info.RunAt, now)
	if !info.CreatedAt.IsZero() {
		p.Created = formatTime(info.CreatedAt, now)
	}
	for _, k := range slices.Sorted(maps.Keys(info.Header)) {
		p.Header = append(p.Header, headerEntry{k, info.Header[k]})
	}
	p.Shown = min(len(data), MaxDataShown)
	p.Truncated = p.Shown < len(data)
	p.Data, p.Format = formatData(data[:p.Shown])
	p.Actions = d.messageActions(tg, info)
	d.render(w, r, http.StatusOK, "message", page{Title: "Message " + id, Crumbs: crumbs(d, tg), Data: p})
}
