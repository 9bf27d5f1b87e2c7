package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// An action changes a subscription's messages. Its link leads to a
// confirmation page (GET confirm/{action}), whose form POSTs to
// actions/{action}; nothing changes on a GET.
type action struct {
	name  string // in URLs
	label string // the link's and the button's text
	oneID bool   // it acts on one message, named by the form's id
	// question and explain are the confirmation page's: %[1]s is the
	// message id, %[2]s the target in words.
	question, explain string
	// back is the state whose list the action returns to.
	back admin.MessageState
	run  func(ctx context.Context, t pubsub.Topic, id string) (int, error)
	// done is the note shown after it: %[1]s the id, %[2]d the count.
	done string
}

// actions are the dashboard's actions, by name.
var actions = byName([]*action{
	{name: "requeue", label: "Requeue", oneID: true, back: admin.StateDead,
		question: "Re-queue dead message %[1]s of %[2]s?",
		explain:  "It becomes ready again with a fresh attempt count, and a consumer of this subscription gets it.",
		run: func(ctx context.Context, t pubsub.Topic, id string) (int, error) {
			return 1, admin.RequeueDead(ctx, t, id)
		},
		done: "Message %[1]s was re-queued."},
	{name: "purge", label: "Delete", oneID: true, back: admin.StateDead,
		question: "Delete dead message %[1]s of %[2]s for good?",
		explain:  "It cannot be recovered afterwards.",
		run: func(ctx context.Context, t pubsub.Topic, id string) (int, error) {
			return 1, admin.DeleteDead(ctx, t, id)
		},
		done: "Dead message %[1]s was deleted."},
	{name: "requeue-all", label: "Requeue all dead", back: admin.StateDead,
		question: "Re-queue every dead message of %[2]s?",
		explain:  "They become ready again with fresh attempt counts, and the consumers of this subscription get them.",
		run: func(ctx context.Context, t pubsub.Topic, _ string) (int, error) {
			return admin.RequeueAllDead(ctx, t)
		},
		done: "%[2]d dead messages were re-queued."},
	{name: "purge-all", label: "Delete all dead", back: admin.StateDead,
		question: "Delete every dead message of %[2]s for good?",
		explain:  "They cannot be recovered afterwards.",
		run: func(ctx context.Context, t pubsub.Topic, _ string) (int, error) {
			return admin.PurgeDead(ctx, t)
		},
		done: "%[2]d dead messages were deleted."},
	{name: "cancel", label: "Cancel", oneID: true, back: admin.StateReady,
		question: "Cancel message %[1]s of %[2]s?",
		explain:  "It is deleted before delivery: no consumer of this subscription gets it. A message being processed or dead cannot be cancelled.",
		run: func(ctx context.Context, t pubsub.Topic, id string) (int, error) {
			return 1, admin.Cancel(ctx, t, id)
		},
		done: "Message %[1]s was cancelled."},
	{name: "pause", label: "Pause", back: admin.StateReady,
		question: "Pause %[2]s?",
		explain:  "No consumer, in any process, gets its messages until it is resumed. Enqueues still work: the messages wait.",
		run: func(ctx context.Context, t pubsub.Topic, _ string) (int, error) {
			return 0, admin.Pause(ctx, t)
		},
		done: "The subscription is paused."},
	{name: "resume", label: "Resume", back: admin.StateReady,
		question: "Resume %[2]s?",
		explain:  "Its consumers get its messages again.",
		run: func(ctx context.Context, t pubsub.Topic, _ string) (int, error) {
			return 0, admin.Resume(ctx, t)
		},
		done: "The subscription was resumed."},
})

func byName(as []*action) map[string]*action {
	m := make(map[string]*action, len(as))
	for _, a := range as {
		m[a.name] = a
	}
	return m
}

// words names tg for a sentence.
func (tg target) words() string {
	return fmt.Sprintf("topic %q (subscription %q)", tg.Topic, tg.Sub)
}

// link returns the link to the confirmation of a on tg (and id).
func (d *Dashboard) actionLink(a *action, tg target, id string) link {
	u := d.url(tg.path() + "confirm/" + a.name)
	if id != "" {
		u += "?id=" + url.QueryEscape(id)
	}
	return link{Name: a.label, URL: u}
}

// confirm serves GET .../confirm/{action}: what the action does, and the
// form that does it.
func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request) {
	tg, a, id, ok := d.actionRequest(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	back := d.url(tg.path()) + "?state=" + string(a.back)
	if a.oneID {
		back = d.url(tg.path() + "messages/" + url.PathEscape(id))
	}
	d.render(w, r, http.StatusOK, "confirm", page{Title: a.label, Crumbs: crumbs(d, tg),
		Data: struct{ Question, Explain, Button, Action, ID, Back string }{
			Question: fmt.Sprintf(a.question, id, tg.words()), Explain: a.explain, Button: a.label,
			Action: d.url(tg.path() + "actions/" + a.name), ID: id, Back: back}})
}

// act serves POST .../actions/{action}: it checks the form's token, does
// the action and sends the browser back to the list, with a note.
func (d *Dashboard) act(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	if !d.opts.ReadOnly && !d.csrf.valid(r) {
		d.fail(w, r, http.StatusForbidden, "the form's token is missing or stale: go back, reload the page and try again")
		return
	}
	tg, a, id, ok := d.actionRequest(w, r, r.PostFormValue("id"))
	if !ok {
		return
	}
	ctx, t, done, ok := d.open(w, r, tg)
	if !ok {
		return
	}
	defer done()
	n, err := a.run(ctx, t, id)
	if err != nil {
		d.log.WarnContext(ctx, "dashboard: action failed", "action", a.name, "topic", tg.Topic, "subscription", tg.Sub, "message_id", id, "error", err)
		d.failErr(w, r, fmt.Errorf("%s: %w", a.label, err))
		return
	}
	d.log.InfoContext(ctx, "dashboard: action done", "action", a.name, "topic", tg.Topic, "subscription", tg.Sub, "message_id", id, "count", n)
	q := url.Values{"state": {string(a.back)}, "done": {a.name}, "n": {strconv.Itoa(n)}}
	if id != "" {
		q.Set("id_done", id)
	}
	http.Redirect(w, r, d.url(tg.path())+"?"+q.Encode(), http.StatusSeeOther)
}

// actionRequest reads the target and the action of r, and the id the
// action needs; it answers the error page and returns false when one is
// wrong, or when the dashboard is read-only.
func (d *Dashboard) actionRequest(w http.ResponseWriter, r *http.Request, id string) (target, *action, string, bool) {
	tg := target{Topic: r.PathValue("topic"), Sub: r.PathValue("sub")}
	a, ok := actions[r.PathValue("action")]
	switch {
	case d.opts.ReadOnly:
		d.fail(w, r, http.StatusForbidden, "this dashboard is read-only: it changes nothing")
	case !ok:
		d.fail(w, r, http.StatusNotFound, fmt.Sprintf("no action %q", r.PathValue("action")))
	case a.oneID && id == "":
		d.fail(w, r, http.StatusBadRequest, a.label+": no message id given")
	case a.oneID && len(id) > maxIDLen:
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s: the message id is %d bytes long, more than any backend's (%d)", a.label, len(id), maxIDLen))
	default:
		if !a.oneID {
			id = ""
		}
		return tg, a, id, true
	}
	return tg, nil, "", false
}

// doneNote is the note the list shows after an action (from act's
// redirect), "" when there is none.
func doneNote(q url.Values) string {
	a, ok := actions[q.Get("done")]
	if !ok {
		return ""
	}
	n, _ := strconv.Atoi(q.Get("n"))
	return fmt.Sprintf(a.done, q.Get("id_done"), n)
}

// maxIDLen bounds the message ids the dashboard passes on.
const maxIDLen = 200

// failErr answers the error page for a backend call's err, with the
// status that says what went wrong.
func (d *Dashboard) failErr(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, errUnknown), errors.Is(err, admin.ErrNotFound), errors.Is(err, pubsub.ErrNoSubscription):
		code = http.StatusNotFound
	case errors.Is(err, admin.ErrInvalidID), errors.Is(err, admin.ErrInvalidCursor), errors.Is(err, pubsub.ErrInvalidTopic),
		errors.Is(err, pubsub.ErrInvalidSubscription):
		code = http.StatusBadRequest
	case errors.Is(err, admin.ErrWrongState):
		code = http.StatusConflict
	case errors.Is(err, pubsub.ErrUnsupported):
		code = http.StatusNotImplemented
	}
	d.fail(w, r, code, err.Error())
}
