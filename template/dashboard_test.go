package template_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/event"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	shop "github.com/conveyorgo/conveyor/template/app/orders"
)

// screenshots is a folder where TestDashboardInBrowser also writes its
// screenshots, for the README: go test ./template -run
// TestDashboardInBrowser -args -screenshots $PWD/docs (with a PostgreSQL,
// as make test has).
var screenshots = flag.String("screenshots", "", "also write the dashboard's screenshots, dashboard-*.png, to this folder")

// chromiumPath is the browser of the tests: $CHROMIUM, else Debian's
// chromium on PATH. Without one the test fails, saying how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium: install it (Debian/Ubuntu: apt-get install chromium; make test does) or set CHROMIUM to its path")
	return ""
}

// TestDashboardInBrowser runs the app with an order whose fulfilment died
// (a "warehouse offline" failure, made before the app started), and acts
// as an operator in headless Chromium: the dashboard's topics page shows
// the dead message (its count on PostgreSQL; on Kafka, which counts
// nothing, a link to the dead messages), its list shows why it died, its
// page shows the order, the Requeue link and the confirmation's button
// re-queue it, and the app delivers it: its fulfilment handles the order
// and nothing is dead any more.
func TestDashboardInBrowser(t *testing.T) {
	t.Run("DB", func(t *testing.T) {
		t.Parallel()
		dsn, db := dbpubsubtest.NewStore(t)
		ps := dbpubsubtest.New(t, db, dbpubsub.Options{Prefetch: -1})
		deadID := deadOrder(t, ps)
		p := startApp(t, "CONVEYOR_BACKEND=db", "DATABASE_URL="+dsn)
		requeueInBrowser(t, p, deadID, true)
	})
	t.Run("Kafka", func(t *testing.T) {
		t.Parallel()
		brokers := kafkapubsubtest.Brokers(t)
		prefix := kafkapubsubtest.Prefix(t, brokers)
		ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		deadID := deadOrder(t, ps)
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
		p := startApp(t, "CONVEYOR_BACKEND=kafka", "KAFKA_BROKERS="+strings.Join(brokers, ","), "CONVEYOR_KAFKA_PREFIX="+prefix)
		requeueInBrowser(t, p, deadID, false)
	})
}

// requeueInBrowser re-queues the dead order deadID of the app p through
// its dashboard in headless Chromium, as TestDashboardInBrowser says, and
// stops the app. counted says whether the backend counts its messages
// (the topics page shows the dead count) or not (it links to the dead
// list, which says when none is left).
func requeueInBrowser(t *testing.T, p *process, deadID string, counted bool) {
	t.Helper()
	ctx, cancel := newBrowser(t)
	defer cancel()
	deadLink := chromedp.CSS(`a[href="/conveyor/topics/orders/default/?state=dead"]`)
	do(t, ctx, "open the topics page", chromedp.Navigate(p.url+"/conveyor/"))
	if n, want := get(t, ctx, chromedp.Text(deadLink)), map[bool]string{true: "1", false: "dead messages"}[counted]; n != want {
		t.Fatalf("the topics page's dead link of orders/default says %q, want %q", n, want)
	}
	do(t, ctx, "open the dead list", chromedp.Click(deadLink), chromedp.WaitVisible(chromedp.CSS(`table.messages`)))
	list := get(t, ctx, chromedp.Text(chromedp.CSS(`table.messages`)))
	for _, want := range []string{deadID, "warehouse offline", `"specversion":"1.0"`} {
		if !strings.Contains(list, want) {
			t.Fatalf("the dead list does not show %q:\n%s", want, list)
		}
	}
	if counted {
		savePNG(t, "dashboard-dead.png", get(t, ctx, chromedp.FullScreenshot(100)))
	}
	do(t, ctx, "open the message", chromedp.Click(chromedp.CSS(`a[href$="/messages/`+deadID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`pre.data`)))
	if data := get(t, ctx, chromedp.Text(chromedp.CSS(`pre.data`))); !strings.Contains(data, `"order_id": "order-dead-1"`) {
		t.Fatalf("the message's page shows its data as:\n%s", data)
	}
	do(t, ctx, "click Requeue", chromedp.Click(chromedp.CSS(`a.action[href$="confirm/requeue?id=`+deadID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.confirm`)))
	if q := get(t, ctx, chromedp.Text(chromedp.CSS(`h1`))); !strings.Contains(q, "Re-queue dead message "+deadID) {
		t.Errorf("the confirmation page asks %q", q)
	}
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	if flash := get(t, ctx, chromedp.Text(chromedp.CSS(`p.flash`))); flash != "Message "+deadID+" was re-queued." {
		t.Errorf("after the confirmation, the page says %q", flash)
	}

	// The app delivers it: fulfilment handles the order once.
	p.waitHandledCount(t, map[string]int{"default": 1, "analytics": 0})
	if !counted {
		do(t, ctx, "open the dead list", chromedp.Navigate(p.url+"/conveyor/topics/orders/default/?state=dead"))
		if body := get(t, ctx, chromedp.Text(chromedp.CSS(`main`))); !strings.Contains(body, "No dead messages.") {
			t.Errorf("after the requeue, the dead list shows:\n%s", body)
		}
		p.stop(t)
		return
	}
	for deadline := time.Now().Add(waitHandled); ; time.Sleep(100 * time.Millisecond) {
		do(t, ctx, "open the topics page", chromedp.Navigate(p.url+"/conveyor/"))
		n := get(t, ctx, chromedp.Text(deadLink))
		if n == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the topics page still shows %q dead messages after %v", n, waitHandled)
		}
	}
	savePNG(t, "dashboard-topics.png", get(t, ctx, chromedp.FullScreenshot(100)))
	p.stop(t)
}

// deadOrder places an order on ps's topic orders, as the app would, whose
// fulfilment (the default subscription) failed for good and whose
// analytics copy was handled; it returns the dead message's id.
func deadOrder(t *testing.T, ps pubsub.PubSub) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var subs []pubsub.Topic
	for _, name := range subscriptions {
		sub, err := pubsub.Subscribe(ctx, ps, shop.Topic, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Close() })
		subs = append(subs, sub)
	}
	d := event.NewDispatcher(subs[0], event.DispatcherOptions{})
	if err := d.Dispatch(ctx, shop.Placed{OrderID: "order-dead-1", Item: "book", Qty: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := subs[0].Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pubsub.Reject(ctx, m, errors.New("warehouse offline")); err != nil {
		t.Fatal(err)
	}
	a, err := subs[1].Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	return m.ID()
}

// newBrowser starts headless Chromium with a profile of its own, without
// any of its connections to the internet, and returns its context.
func newBrowser(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 720),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	// No bound on the browser as a whole: each step has its own (do, get),
	// and a slow app on a loaded machine may take many steps' worth.
	ctx, cancel := chromedp.NewContext(actx)
	stop := func() { cancel(); acancel() }
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		stop()
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx, stop
}

// do runs the browser's steps, failing the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs the browser's action and returns its value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("in the browser: %v", err)
	}
	return v
}

// savePNG keeps a screenshot in the test's temp dir, and in -screenshots
// when it is set, and says where.
func savePNG(t *testing.T, name string, png []byte) {
	t.Helper()
	for _, dir := range []string{t.TempDir(), *screenshots} {
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// checkDashboard checks that the app's dashboard shows its topic's two
// subscriptions, every order handled and none dead. (Ready and processing
// are not checked: the periodic report, every 200 ms here, may be in
// either.)
func (p *process) checkDashboard(t *testing.T) {
	t.Helper()
	resp, err := http.Get(p.url + "/conveyor/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /conveyor/ = %s, %v:\n%s", resp.Status, err, body)
	}
	for _, sub := range subscriptions {
		link := "/conveyor/topics/orders/" + sub + "/"
		for _, want := range []string{`<a href="` + link + `">orders</a>`, `<a href="` + link + `?state=dead">0</a>`} {
			if !strings.Contains(string(body), want) {
				t.Errorf("the dashboard does not show %s:\n%s", want, body)
			}
		}
	}
}

// checkDashboardDead checks the app's dashboard on a backend that does not
// count its messages but lists its dead ones (Kafka): the topics page
// shows each subscription of want, saying it is not counted, with a link
// to its dead messages, whose list has want[sub] rows.
func (p *process) checkDashboardDead(t *testing.T, want map[string]int) {
	t.Helper()
	body := p.get(t, "/conveyor/")
	for sub, n := range want {
		link := "/conveyor/topics/orders/" + sub + "/"
		for _, w := range []string{`<a href="` + link + `">orders</a>`,
			`not counted by this backend · <a href="` + link + `?state=dead">dead messages</a>`} {
			if !strings.Contains(body, w) {
				t.Errorf("the dashboard does not show %s:\n%s", w, body)
			}
		}
		list := p.get(t, link+"?state=dead")
		rows := strings.Count(list, `<td class="lasterror">`)
		switch {
		case n == 0 && !strings.Contains(list, "<p>No dead messages.</p>"):
			t.Errorf("the dead list of %s does not say it has none:\n%s", sub, list)
		case rows != n:
			t.Errorf("the dead list of %s has %d messages, want %d:\n%s", sub, rows, n, list)
		}
	}
}

// get returns the body of GET path of the app, which must answer 200.
func (p *process) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(p.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s, %v:\n%s", path, resp.Status, err, body)
	}
	return string(body)
}
