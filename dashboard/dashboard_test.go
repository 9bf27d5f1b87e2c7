package dashboard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dashboard"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// backends are the PubSubs the dashboard is tested on: channelpubsub in
// process, dbpubsub on a real PostgreSQL (a schema of the test's own).
var backends = []struct {
	name string
	open func(t *testing.T) pubsub.PubSub
}{
	{"channelpubsub", func(t *testing.T) pubsub.PubSub {
		ps := channelpubsub.New()
		t.Cleanup(func() { _ = ps.Close() })
		return ps
	}},
	{"dbpubsub", func(t *testing.T) pubsub.PubSub {
		_, db := dbpubsubtest.NewStore(t)
		// No prefetch: the fixture's consumer would claim the messages
		// it leaves ready (a claimed message is processing).
		return dbpubsubtest.New(t, db, dbpubsub.Options{Prefetch: -1})
	}},
}

// forEachBackend runs f on each backend, in parallel.
func forEachBackend(t *testing.T, f func(t *testing.T, ps pubsub.PubSub)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b.open(t))
		})
	}
}

// fixture is a topic "orders" with known messages in every state.
type fixture struct {
	ps                          pubsub.PubSub
	topic                       pubsub.Topic
	jsonID, scriptID, delayedID string
	deadID, processingID        string
	processing                  pubsub.Message
}

// Data and reasons that a page must show as text, never as markup.
const (
	scriptData   = `<script>alert("data")</script>`
	scriptReason = `<img src=x onerror=alert("reason")>`
	scriptHeader = `<b onmouseover=alert("header")>`
)

func newFixture(t *testing.T, ps pubsub.PubSub) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{ps: ps, topic: ps.Topic("orders")}
	t.Cleanup(func() { _ = f.topic.Close() })
	enqueue := func(ctx context.Context, data string) {
		t.Helper()
		if err := f.topic.Enqueue(ctx, []byte(data)); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	// In the order of delivery: the dead one, the processing one, then
	// the two that stay ready.
	enqueue(ctx, `{"doomed":true}`)
	enqueue(ctx, `{"busy":true}`)
	enqueue(ctx, `{"item":"book","qty":1}`)
	enqueue(pubsub.WithHeader(ctx, pubsub.Header{"note": scriptHeader}), scriptData)
	if err := pubsub.EnqueueDelayed(ctx, f.topic, []byte("later"), time.Hour); err != nil {
		t.Fatalf("EnqueueDelayed: %v", err)
	}
	dead := dequeue(t, f.topic)
	if err := pubsub.Reject(ctx, dead, errors.New(scriptReason)); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	f.deadID = dead.ID()
	f.processing = dequeue(t, f.topic)
	f.processingID = f.processing.ID()
	t.Cleanup(func() { _ = f.processing.Nack(context.Background()) })

	page, err := admin.Peek(ctx, f.topic, admin.PeekOptions{State: admin.StateReady})
	if err != nil || len(page.Messages) != 2 {
		t.Fatalf("Peek(ready) = %+v, %v: want the 2 ready messages", page, err)
	}
	f.jsonID, f.scriptID = page.Messages[0].ID, page.Messages[1].ID
	page, err = admin.Peek(ctx, f.topic, admin.PeekOptions{State: admin.StateScheduled})
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("Peek(scheduled) = %+v, %v: want the delayed message", page, err)
	}
	f.delayedID = page.Messages[0].ID
	return f
}

func dequeue(t *testing.T, tp pubsub.Topic) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	return m
}

// server serves the dashboard of ps under /conveyor, beside a page of the
// app's own, as an app mounts it.
type server struct {
	*httptest.Server
	client *http.Client // a browser: it keeps cookies, and does not follow redirects
}

func newServer(t *testing.T, ps pubsub.PubSub, opts dashboard.Options) *server {
	t.Helper()
	opts.Prefix = "/conveyor"
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.SampleInterval == 0 {
		opts.SampleInterval = -1
	}
	d, err := dashboard.New(ps, opts)
	if err != nil {
		t.Fatalf("dashboard.New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	mux := http.NewServeMux()
	mux.Handle("/conveyor/", d)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the app") })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	jar, _ := cookiejar.New(nil)
	return &server{Server: s, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get returns the status and body of GET path.
func (s *server) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.client.Get(s.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// post posts form to path with the headers a same-origin browser form
// sends, and returns the response.
func (s *server) post(t *testing.T, path string, form url.Values, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// confirm follows an action's link: it loads the confirmation page at
// path, and posts its form as the button does. It returns the response to
// the POST.
func (s *server) confirm(t *testing.T, path string) *http.Response {
	t.Helper()
	code, body := s.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200:\n%s", path, code, body)
	}
	m := csrfInput.FindStringSubmatch(body)
	action := regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindStringSubmatch(body)
	if m == nil || action == nil {
		t.Fatalf("GET %s: no form with a token:\n%s", path, body)
	}
	form := url.Values{"csrf": {m[1]}}
	if id := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(body); id != nil {
		form.Set("id", id[1])
	}
	u, err := url.Parse(action[1])
	if err != nil {
		t.Fatal(err)
	}
	return s.post(t, u.Path, form, nil)
}

const base = "/conveyor/topics/orders/default/"

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, body)
		}
	}
}

func mustNotContain(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Errorf("%s contains %q:\n%s", what, w, body)
		}
	}
}

func TestPages(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		f := newFixture(t, ps)
		s := newServer(t, ps, dashboard.Options{})

		code, body := s.get(t, "/conveyor/")
		if code != http.StatusOK {
			t.Fatalf("GET /conveyor/ = %d:\n%s", code, body)
		}
		mustContain(t, "the overview", body, `<a href="`+base+`">orders</a>`,
			`<a href="`+base+`?state=ready">2</a>`, `<a href="`+base+`?state=scheduled">1</a>`,
			`<a href="`+base+`?state=processing">1</a>`, `<a href="`+base+`?state=dead">1</a>`, "<td>running</td>")

		code, body = s.get(t, base)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", base, code, body)
		}
		mustContain(t, "the ready list", body, `aria-current="page">ready (2)`, ">"+f.jsonID+"</a>", ">"+f.scriptID+"</a>",
			`{&#34;item&#34;:&#34;book&#34;,&#34;qty&#34;:1}`, `&lt;script&gt;alert(&#34;data&#34;)&lt;/script&gt;`,
			base+"confirm/cancel?id="+f.jsonID, base+"confirm/pause")
		mustNotContain(t, "the ready list", body, scriptData, ">"+f.deadID+"</a>")

		_, body = s.get(t, base+"?state=scheduled")
		mustContain(t, "the scheduled list", body, ">"+f.delayedID+"</a>", "later", "(in ")
		_, body = s.get(t, base+"?state=processing")
		mustContain(t, "the processing list", body, ">"+f.processingID+"</a>", "Lease until")
		mustNotContain(t, "the processing list", body, "confirm/cancel")

		_, body = s.get(t, base+"?state=dead")
		mustContain(t, "the dead list", body, ">"+f.deadID+"</a>", `&lt;img src=x onerror=alert(&#34;reason&#34;)&gt;`,
			base+"confirm/requeue?id="+f.deadID, base+"confirm/purge?id="+f.deadID, base+"confirm/requeue-all", base+"confirm/purge-all")
		mustNotContain(t, "the dead list", body, scriptReason)

		_, body = s.get(t, base+"messages/"+f.scriptID)
		mustContain(t, "the <script> message", body, "<h1>Message "+f.scriptID+"</h1>", "<small>text</small>",
			`&lt;script&gt;alert(&#34;data&#34;)&lt;/script&gt;`, `<th scope="row">note</th><td><code>&lt;b onmouseover=alert(&#34;header&#34;)&gt;</code>`)
		mustNotContain(t, "the <script> message", body, scriptData, scriptHeader)

		_, body = s.get(t, base+"messages/"+f.jsonID)
		mustContain(t, "the JSON message", body, "<small>JSON</small>", "{\n  &#34;item&#34;: &#34;book&#34;,\n  &#34;qty&#34;: 1\n}")

		_, body = s.get(t, base+"messages/"+f.deadID)
		mustContain(t, "the dead message", body, "<dd>dead</dd>", `&lt;img src=x`, base+"confirm/requeue?id="+f.deadID)

		// Search by id goes to the message's page.
		resp, err := s.client.Get(s.URL + base + "?id=" + f.jsonID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != base+"messages/"+f.jsonID {
			t.Errorf("search by id: %d to %q, want 303 to the message's page", resp.StatusCode, loc)
		}
		// The style sheet is embedded.
		code, body = s.get(t, "/conveyor/static/style.css")
		if code != http.StatusOK || !strings.Contains(body, "svg.chart") {
			t.Errorf("GET /conveyor/static/style.css = %d, %.80q", code, body)
		}
	})
}

// TestBadRequests: each wrong input gets its status and a page that says
// what was wrong.
func TestBadRequests(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		newFixture(t, ps)
		s := newServer(t, ps, dashboard.Options{})
		for _, c := range []struct {
			path string
			code int
			want string
		}{
			{"/conveyor/topics/nope/default/", http.StatusNotFound, `no topic &#34;nope&#34;`},
			{"/conveyor/topics/orders/nope/", http.StatusNotFound, `topic &#34;orders&#34; has no subscription &#34;nope&#34;`},
			{base + "?state=done", http.StatusBadRequest, `no message state &#34;done&#34;`},
			{base + "?limit=0", http.StatusBadRequest, `limit &#34;0&#34;: want a number of messages from 1 to 1000`},
			{base + "?state=dead&after=garbage", http.StatusBadRequest, "invalid peek cursor"},
			{base + "messages/abc", http.StatusBadRequest, "invalid message ID"},
			{base + "messages/99999999", http.StatusNotFound, "message not found"},
			{base + "confirm/explode", http.StatusNotFound, `no action &#34;explode&#34;`},
			{base + "confirm/requeue", http.StatusBadRequest, "Requeue: no message id given"},
			{"/conveyor/nowhere", http.StatusNotFound, "no page /nowhere"},
		} {
			code, body := s.get(t, c.path)
			if code != c.code || !strings.Contains(body, c.want) {
				t.Errorf("GET %s = %d, want %d with %q:\n%s", c.path, code, c.code, c.want, body)
			}
		}
		// Outside the prefix is the app's; the prefix alone redirects.
		if code, body := s.get(t, "/"); code != http.StatusOK || body != "the app" {
			t.Errorf("GET / = %d %q: the app's page, not the dashboard's", code, body)
		}
		resp, err := s.client.Get(s.URL + "/conveyor")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/conveyor/" {
			t.Errorf("GET /conveyor = %d to %q, want a redirect to /conveyor/", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

func stats(t *testing.T, tp pubsub.Topic) admin.Stats {
	t.Helper()
	st, err := admin.TopicStats(context.Background(), tp)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// TestActions does each action as a browser does (its link, the
// confirmation page, the form) and checks the backend afterwards.
func TestActions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		ctx := context.Background()
		f := newFixture(t, ps)
		s := newServer(t, ps, dashboard.Options{})

		// Requeue the dead message: it is delivered again.
		resp := s.confirm(t, base+"confirm/requeue?id="+f.deadID)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("requeue: %d, want 303", resp.StatusCode)
		}
		loc := resp.Header.Get("Location")
		_, body := s.get(t, loc)
		mustContain(t, "the page after requeue", body, "Message "+f.deadID+" was re-queued.")
		if st := stats(t, f.topic); st.Dead != 0 || st.Ready != 3 {
			t.Fatalf("after requeue: %+v, want 0 dead and 3 ready", st)
		}
		// It is delivered again, after the ready messages before it.
		var got pubsub.Message
		for got == nil {
			m := dequeue(t, f.topic)
			if m.ID() != f.deadID {
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got = m
		}
		if string(got.Data()) != `{"doomed":true}` {
			t.Fatalf("after requeue, %s was delivered with %q, want its data", got.ID(), got.Data())
		}
		// Killed again, then deleted for good.
		if err := pubsub.Reject(ctx, got, errors.New("again")); err != nil {
			t.Fatal(err)
		}
		if resp := s.confirm(t, base+"confirm/purge?id="+f.deadID); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("purge: %d, want 303", resp.StatusCode)
		}
		if _, _, err := admin.GetMessage(ctx, f.topic, f.deadID); !errors.Is(err, admin.ErrNotFound) {
			t.Fatalf("after purge, GetMessage = %v, want ErrNotFound", err)
		}

		// Cancel the scheduled message; cancelling the processing one is
		// refused.
		if resp := s.confirm(t, base+"confirm/cancel?id="+f.delayedID); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("cancel: %d, want 303", resp.StatusCode)
		}
		if _, _, err := admin.GetMessage(ctx, f.topic, f.delayedID); !errors.Is(err, admin.ErrNotFound) {
			t.Fatalf("after cancel, GetMessage = %v, want ErrNotFound", err)
		}
		if resp := s.confirm(t, base+"confirm/cancel?id="+f.processingID); resp.StatusCode != http.StatusConflict {
			t.Fatalf("cancel of a processing message: %d, want 409", resp.StatusCode)
		}

		// Pause, then resume.
		if resp := s.confirm(t, base+"confirm/pause"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("pause: %d, want 303", resp.StatusCode)
		}
		if p, err := admin.IsPaused(ctx, f.topic); err != nil || !p {
			t.Fatalf("after pause, IsPaused = %v, %v", p, err)
		}
		_, body = s.get(t, base)
		mustContain(t, "a paused subscription's page", body, "Paused: no consumer gets its messages.", base+"confirm/resume")
		if resp := s.confirm(t, base+"confirm/resume"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("resume: %d, want 303", resp.StatusCode)
		}
		if p, err := admin.IsPaused(ctx, f.topic); err != nil || p {
			t.Fatalf("after resume, IsPaused = %v, %v", p, err)
		}

		// Requeue all, then delete all: two dead messages each time.
		for _, data := range []string{"a", "b"} {
			if err := f.topic.Enqueue(ctx, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			for _, m := range []pubsub.Message{dequeue(t, f.topic), dequeue(t, f.topic)} {
				if err := pubsub.Reject(ctx, m, errors.New("bulk")); err != nil {
					t.Fatal(err)
				}
			}
			if st := stats(t, f.topic); st.Dead != 2 {
				t.Fatalf("%+v: want 2 dead", st)
			}
			if resp := s.confirm(t, base+"confirm/requeue-all"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("requeue-all: %d, want 303", resp.StatusCode)
			} else if _, body := s.get(t, resp.Header.Get("Location")); !strings.Contains(body, "2 dead messages were re-queued.") {
				t.Errorf("after requeue-all:\n%s", body)
			}
		}
		for _, m := range []pubsub.Message{dequeue(t, f.topic), dequeue(t, f.topic)} {
			if err := pubsub.Reject(ctx, m, errors.New("bulk")); err != nil {
				t.Fatal(err)
			}
		}
		if resp := s.confirm(t, base+"confirm/purge-all"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("purge-all: %d, want 303", resp.StatusCode)
		}
		if st := stats(t, f.topic); st.Dead != 0 {
			t.Fatalf("after purge-all: %+v, want no dead", st)
		}
	})
}

// TestCSRF: a POST without the form's token, with another browser's, or
// from another site changes nothing.
func TestCSRF(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		f := newFixture(t, ps)
		s := newServer(t, ps, dashboard.Options{})
		_, page := s.get(t, base+"confirm/requeue?id="+f.deadID)
		token := csrfInput.FindStringSubmatch(page)[1]
		path := base + "actions/requeue"

		other := newServer(t, ps, dashboard.Options{}) // another dashboard: another key
		_, otherPage := other.get(t, base+"confirm/requeue?id="+f.deadID)
		otherToken := csrfInput.FindStringSubmatch(otherPage)[1]

		for _, c := range []struct {
			name   string
			form   url.Values
			header map[string]string
		}{
			{"no token", url.Values{"id": {f.deadID}}, nil},
			{"a wrong token", url.Values{"id": {f.deadID}, "csrf": {wrongToken(token)}}, nil},
			{"another dashboard's token", url.Values{"id": {f.deadID}, "csrf": {otherToken}}, nil},
			{"from another site", url.Values{"id": {f.deadID}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{"from another origin", url.Values{"id": {f.deadID}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "", "Origin": "http://evil.example"}},
		} {
			if resp := s.post(t, path, c.form, c.header); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: POST = %d, want 403", c.name, resp.StatusCode)
			}
		}
		// A browser without the cookie (the token alone) is refused too.
		bare := &http.Client{CheckRedirect: s.client.CheckRedirect}
		req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(url.Values{"id": {f.deadID}, "csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := bare.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("no cookie: POST = %d, want 403", resp.StatusCode)
		}
		if st := stats(t, f.topic); st.Dead != 1 {
			t.Fatalf("after refused POSTs: %+v, want the dead message still dead", st)
		}
		// A GET changes nothing either.
		if code, _ := s.get(t, path); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s = %d, want 404 or 405", path, code)
		}
		if st := stats(t, f.topic); st.Dead != 1 {
			t.Fatalf("after a GET: %+v, want the dead message still dead", st)
		}
	})
}

// TestReadOnly: a read-only dashboard shows no action and refuses them.
func TestReadOnly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		f := newFixture(t, ps)
		rw := newServer(t, ps, dashboard.Options{})
		_, page := rw.get(t, base+"confirm/purge-all")
		token := csrfInput.FindStringSubmatch(page)[1]

		s := newServer(t, ps, dashboard.Options{ReadOnly: true})
		for _, path := range []string{"/conveyor/", base, base + "?state=dead", base + "messages/" + f.deadID} {
			code, body := s.get(t, path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d", path, code)
			}
			mustContain(t, path, body, `<span class="badge" title="actions are turned off">read-only</span>`)
			mustNotContain(t, path, body, "confirm/", `class="action"`)
		}
		if code, body := s.get(t, base+"confirm/purge-all"); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("GET confirm on a read-only dashboard = %d:\n%s", code, body)
		}
		// Even with a valid token and cookie (taken from a writable
		// dashboard's page, on the same host), a POST is refused.
		s.client.Jar = rw.client.Jar
		u, _ := url.Parse(rw.URL)
		s.client.Jar.SetCookies(mustURL(t, s.URL), s.client.Jar.Cookies(u))
		if resp := s.post(t, base+"actions/purge-all", url.Values{"csrf": {token}}, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST purge-all on a read-only dashboard = %d, want 403", resp.StatusCode)
		}
		if st := stats(t, f.topic); st.Dead != 1 {
			t.Fatalf("after a read-only dashboard's POST: %+v, want the dead message kept", st)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTopicNames: a topic named with characters a URL escapes (a slash,
// a space, a quote) has working pages.
func TestTopicNames(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		name := `eu/orders "new"`
		tp := ps.Topic(name)
		t.Cleanup(func() { _ = tp.Close() })
		if err := tp.Enqueue(context.Background(), []byte("x")); err != nil {
			t.Fatal(err)
		}
		s := newServer(t, ps, dashboard.Options{})
		_, body := s.get(t, "/conveyor/")
		link := "/conveyor/topics/" + url.PathEscape(name) + "/default/"
		mustContain(t, "the overview", body, `href="`+strings.ReplaceAll(link, `"`, "%22")+`"`)
		code, body := s.get(t, link)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", link, code, body)
		}
		mustContain(t, link, body, "<h1>eu/orders &#34;new&#34; <small>subscription default</small></h1>", "ready (1)")
	})
}

// TestOptions: New names the field it cannot use.
func TestOptions(t *testing.T) {
	ps := channelpubsub.New()
	defer ps.Close()
	for _, c := range []struct {
		opts dashboard.Options
		want string
	}{
		{dashboard.Options{Prefix: "conveyor"}, "Prefix"},
		{dashboard.Options{Prefix: "/conveyor/"}, "Prefix"},
		{dashboard.Options{Prefix: "/con veyor"}, "Prefix"},
		{dashboard.Options{Topics: []string{""}}, "Topics"},
		{dashboard.Options{Timeout: -1}, "Timeout"},
		{dashboard.Options{History: -1}, "History"},
	} {
		_, err := dashboard.New(ps, c.opts)
		if !errors.Is(err, dashboard.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions naming %s", c.opts, err, c.want)
		}
	}
	if _, err := dashboard.New(nil, dashboard.Options{}); !errors.Is(err, dashboard.ErrInvalidOptions) {
		t.Errorf("New(nil) = %v, want ErrInvalidOptions", err)
	}
}

// TestChart: the sampler charts a subscription's acks per second and
// backlog; after acks, the chart's peak rate is above 0.
func TestChart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, ps pubsub.PubSub) {
		ctx := context.Background()
		tp := ps.Topic("orders")
		t.Cleanup(func() { _ = tp.Close() })
		// 8: channelpubsub's enqueue waits while 10 wait already.
		for range 8 {
			if err := tp.Enqueue(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		s := newServer(t, ps, dashboard.Options{SampleInterval: 50 * time.Millisecond, History: 10 * time.Second})
		label := regexp.MustCompile(`aria-label="([0-9.]+) acked/s \(peak ([0-9.]+)\), backlog (\d+) \(peak (\d+)\)"`)
		// The first samples see the backlog; then every message is acked.
		waitFor(t, "a chart of the backlog", func() (bool, string) {
			_, body := s.get(t, "/conveyor/")
			return strings.Contains(body, `<polyline class="backlog"`), body
		})
		for range 8 {
			if err := dequeue(t, tp).Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		last := waitFor(t, "a chart of the acks", func() (bool, string) {
			_, body := s.get(t, "/conveyor/")
			m := label.FindStringSubmatch(body)
			if m == nil {
				return false, body
			}
			return m[2] != "0.0" && m[3] == "0" && m[4] == "8" && strings.Contains(body, `<polyline class="rate"`), m[0]
		})
		t.Logf("chart: %s", last)
	})
}

// waitFor polls cond until it holds and returns what it saw then; after
// 30 s it fails t with what cond saw last.
func waitFor(t *testing.T, what string, cond func() (bool, string)) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ok, seen := cond()
		if ok {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30 s; last seen: %s", what, seen)
		}
	}
}

// wrongToken is token with its first character changed.
func wrongToken(token string) string {
	if token[0] == 'x' {
		return "y" + token[1:]
	}
	return "x" + token[1:]
}
