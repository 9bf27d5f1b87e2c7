package template_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

const (
	orders      = 200
	placedType  = "com.example.shop.order.placed"
	reportType  = "com.example.shop.report.due"
	waitHandled = 60 * time.Second
)

// The app's two event services consume these subscriptions of its topic;
// each gets every event.
var subscriptions = []string{"default", "analytics"}

// TestEndToEnd runs the app's binary on each backend as a user would: it
// posts orders over HTTP, waits until the stats show them all handled by
// both of its event services (fulfilment on the topic's default
// subscription, analytics on its own), checks that its metrics count them,
// stops the app with SIGTERM and checks that it exits 0 having lost
// nothing.
func TestEndToEnd(t *testing.T) {
	t.Run("Mem", func(t *testing.T) {
		t.Parallel()
		p := startApp(t, "CONVEYOR_BACKEND=mem")
		p.postOrders(t)
		p.waitHandled(t)
		p.checkMetrics(t)
		p.checkDashboard(t)
		p.stop(t)
	})
	t.Run("MemSIGINT", func(t *testing.T) {
		// Ctrl-C: the same clean stop and exit 0 as SIGTERM.
		t.Parallel()
		p := startApp(t, "CONVEYOR_BACKEND=mem")
		p.postOrders(t)
		p.waitHandled(t)
		p.stopWith(t, syscall.SIGINT)
	})
	t.Run("MemStopAtOnce", func(t *testing.T) {
		// SIGTERM right after the last order: the events still queued in
		// memory exist nowhere else, so the app handles them before exiting.
		t.Parallel()
		p := startApp(t, "CONVEYOR_BACKEND=mem", "CONVEYOR_WORKERS=2")
		p.postOrders(t)
		p.stop(t)
		for _, sub := range subscriptions {
			want := regexp.MustCompile(fmt.Sprintf(`\b%s:map\[[^]]*%s:%d\b`, sub, regexp.QuoteMeta(placedType), orders))
			if !want.MatchString(p.stoppedLine(t)) {
				t.Errorf("the app stopped without handling every order on subscription %s: %s", sub, p.stoppedLine(t))
			}
		}
	})
	t.Run("DB", func(t *testing.T) {
		t.Parallel()
		dsn, db := pgtest.NewSchema(t) // the app migrates this schema at start-up
		p := startApp(t, "CONVEYOR_BACKEND=db", "DATABASE_URL="+dsn)
		p.postOrders(t)
		p.waitHandled(t)
		p.checkMetrics(t)
		p.checkDashboard(t)
		p.stop(t)

		// Nothing lost: every order is a finished row on each
		// subscription, and no row is in hand or dead. (A report ticked
		// just before the stop may wait, pending, for the next start: that
		// is not lost.)
		checkTable(t, db, orders)
	})
	t.Run("DBAppRole", func(t *testing.T) {
		// The owner migrates and grants (conveyor migrate --grant); the
		// app logs in as a role that owns nothing and may create nothing,
		// and starts, opens its topics and handles every order.
		t.Parallel()
		dsn, db := pgtest.NewSchema(t)
		role := appRole(t, db)
		if err := migrations.Migrate(context.Background(), db, migrations.WithAppRole(role)); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("pgtest's DSN is not a URL: %v", err)
		}
		u.User = url.User(role)
		p := startApp(t, "CONVEYOR_BACKEND=db", "DATABASE_URL="+u.String())
		p.postOrders(t)
		p.waitHandled(t)
		p.checkDashboard(t)
		p.stop(t)
		checkTable(t, db, orders)
	})
	t.Run("DBRestart", func(t *testing.T) {
		// SIGTERM while orders wait in the table: the app stops at once,
		// finishing only the events in hand; the next start handles the
		// rest.
		t.Parallel()
		dsn, db := pgtest.NewSchema(t)
		first := startApp(t, "CONVEYOR_BACKEND=db", "DATABASE_URL="+dsn, "CONVEYOR_WORKERS=1")
		first.postOrders(t)
		first.stop(t)
		counts := rowCounts(t, db)
		left := map[string]int{}
		for _, sub := range subscriptions {
			if n := counts[sub+" "+placedType+" processing"]; n > 0 {
				t.Errorf("the first app left %d orders in hand on subscription %s after its stop: they wait for their lease to run out", n, sub)
			}
			left[sub] = orders - counts[sub+" "+placedType+" finished"]
		}
		t.Logf("orders left for the second start, by subscription: %v", left)

		second := startApp(t, "CONVEYOR_BACKEND=db", "DATABASE_URL="+dsn)
		second.waitHandledCount(t, left)
		second.stop(t)
		checkTable(t, db, orders)
	})
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "shop.db")
		p := startApp(t, "CONVEYOR_BACKEND=sqlite", "CONVEYOR_SQLITE_PATH="+path)
		p.postOrders(t)
		p.waitHandled(t)
		p.checkMetrics(t)
		p.checkDashboard(t)
		p.stop(t)
		checkSQLite(t, path, map[string]int{"default": orders, "analytics": orders})
	})
	t.Run("SQLiteRestart", func(t *testing.T) {
		// SIGTERM while orders wait in the file: the app stops at once,
		// finishing only the events in hand; the next start on the same
		// file handles the rest.
		t.Parallel()
		path := filepath.Join(t.TempDir(), "shop.db")
		first := startApp(t, "CONVEYOR_BACKEND=sqlite", "CONVEYOR_SQLITE_PATH="+path, "CONVEYOR_WORKERS=1")
		first.postOrders(t)
		first.stop(t)
		left := map[string]int{}
		for _, sub := range subscriptions {
			m := regexp.MustCompile(fmt.Sprintf(`\b%s:map\[[^]]*%s:(\d+)\b`, sub, regexp.QuoteMeta(placedType))).FindStringSubmatch(first.stoppedLine(t))
			handled := 0
			if m != nil {
				handled, _ = strconv.Atoi(m[1])
			}
			left[sub] = orders - handled
		}
		t.Logf("orders left for the second start, by subscription: %v", left)
		second := startApp(t, "CONVEYOR_BACKEND=sqlite", "CONVEYOR_SQLITE_PATH="+path)
		second.waitHandledCount(t, left)
		second.stop(t)
		checkSQLite(t, path, map[string]int{"default": orders, "analytics": orders})
	})
	t.Run("NATS", func(t *testing.T) {
		t.Parallel()
		url := natstest.URL(t)
		prefix := natstest.Prefix(t, url) // its streams are deleted after the test
		p := startApp(t, "CONVEYOR_BACKEND=nats", "NATS_URL="+url, "CONVEYOR_NATS_PREFIX="+prefix)
		p.postOrders(t)
		p.waitHandled(t)
		p.checkMetrics(t)
		p.checkDashboard(t)
		p.stop(t)
		checkNATS(t, url, prefix)
	})
	t.Run("Kafka", func(t *testing.T) {
		// On a kfake cluster of the test (or $KAFKA_BROKERS), under a
		// prefix whose topics and groups are deleted after the test.
		// Kafka has no stats (no queue gauges, no counts on the
		// dashboard) and no inbox (analytics counts each delivery).
		t.Parallel()
		brokers := kafkapubsubtest.Brokers(t)
		prefix := kafkapubsubtest.Prefix(t, brokers)
		p := startApp(t, "CONVEYOR_BACKEND=kafka", "KAFKA_BROKERS="+strings.Join(brokers, ","), "CONVEYOR_KAFKA_PREFIX="+prefix)
		if !strings.Contains(p.stderr.String(), `msg="Kafka cluster" brokers=`+strings.Join(brokers, ",")+" prefix="+prefix) {
			t.Errorf("the app did not log the cluster and the prefix it uses:\n%s", p.stderr)
		}
		p.postOrders(t)
		p.waitHandled(t)
		p.checkMetricsOf(t, false)
		p.checkDashboardDead(t, map[string]int{"default": 0, "analytics": 0})
		p.stop(t)
		checkKafka(t, brokers, prefix)
	})
	t.Run("KafkaHealth", func(t *testing.T) {
		// GET /healthz asks Kafka, which has no stats, for the topic's
		// subscriptions: 200 while the cluster answers, 503 once it is
		// gone (a cluster of the test's own, closed midway).
		t.Parallel()
		c, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p := startApp(t, "CONVEYOR_BACKEND=kafka", "KAFKA_BROKERS="+strings.Join(c.ListenAddrs(), ","))
		if code := p.healthBecomes(t, http.StatusOK); code != http.StatusOK {
			t.Errorf("GET /healthz with the cluster up: %d, want 200", code)
		}
		c.Close()
		if code := p.health(t); code != http.StatusServiceUnavailable {
			t.Errorf("GET /healthz with the cluster gone: %d, want 503", code)
		}
	})
}

// health returns the status of GET /healthz.
func (p *process) health(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// healthBecomes asks GET /healthz until it answers want, for up to 30 s,
// and returns its last status: the handler gives the backend 2 s, which a
// machine busy with the app's start (its consumers joining their groups)
// and other tests can exceed once. (A 503 is asked for once: a backend
// that does not answer fails within the 2 s however busy the machine.)
func (p *process) healthBecomes(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code := p.health(t)
		if code == want || time.Now().After(deadline) {
			return code
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkKafka checks that the app on Kafka left nothing dead and no order
// unsettled on either subscription of its topic: what a new consumer gets
// within a few seconds is at most the reports ticked just before the stop.
func checkKafka(t *testing.T, brokers []string, prefix string) {
	t.Helper()
	ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	for _, sub := range subscriptions {
		tp, err := ps.Subscribe(ctx, "orders", sub)
		if sub == "default" {
			tp, err = ps.Topic("orders"), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		dead, err := admin.ListDead(ctx, tp, 0)
		if err != nil || len(dead) != 0 {
			t.Errorf("subscription %s after the stop: %d dead messages (%v), want none", sub, len(dead), err)
		}
		for {
			dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			m, err := tp.Dequeue(dctx)
			cancel()
			if err != nil {
				break
			}
			var e struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(m.Data(), &e); err != nil || e.Type != reportType {
				t.Errorf("subscription %s after the stop: a message %s is left, want at most %s events", sub, m.Data(), reportType)
			}
			if err := m.Ack(ctx); err != nil {
				t.Error(err)
			}
		}
		_ = tp.Close()
	}
}

// checkSQLite checks that the file holds the acked orders want counts on
// each subscription (with the reports, acked or waiting), and no message
// in hand or dead: nothing was lost.
func checkSQLite(t *testing.T, path string, want map[string]int) {
	t.Helper()
	db, err := sqlitepubsub.OpenDB(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT sub, state, count(*) FROM conveyor_messages GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	acked := map[string]int{}
	for rows.Next() {
		var sub string
		var state, n int
		if err := rows.Scan(&sub, &state, &n); err != nil {
			t.Fatal(err)
		}
		switch state {
		case 1, 3:
			t.Errorf("%d messages of subscription %s in state %d (1 processing, 3 dead)", n, sub, state)
		case 2:
			acked[sub] = n
		}
	}
	// A waiting report may be acked later; each subscription acked its
	// orders and at least one report.
	for sub, n := range want {
		if acked[sub] <= n {
			t.Errorf("%d messages acked on subscription %s, want its %d orders and a report", acked[sub], sub, n)
		}
	}
}

// appRole creates a LOGIN role of t's own, with no privileges, and drops
// it with its grants when t ends (after the app's process has exited).
func appRole(t *testing.T, db *bun.DB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "conveyor_app_" + hex.EncodeToString(b[:])
	if _, err := db.DB.ExecContext(context.Background(), `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
			if _, err := db.DB.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return role
}

// checkNATS checks that the app on NATS left nothing dead and no order
// unsettled on either subscription of its topic. A report ticked just
// before the stop may wait for the next start: that is not lost. It is
// ready if the app never fetched it, and processing if the app fetched it
// and gave it back at its Close (a negative ack): JetStream counts a
// message given back as pending its ack until it is delivered again (see
// natspubsub's Stats). So what is left, one message at most, is taken and
// must be a report.
func checkNATS(t *testing.T, url, prefix string) {
	t.Helper()
	ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	for _, sub := range subscriptions {
		tp, err := ps.Subscribe(ctx, "orders", sub)
		if sub == "default" {
			tp, err = ps.Topic("orders"), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		switch left := s.Ready + s.Processing; {
		case s.Dead != 0 || left > 1:
			t.Errorf("subscription %s after the stop: %+v, want nothing dead and at most a report left", sub, s)
		case left == 1:
			checkLeftReport(t, tp, sub, s)
		}
		_ = tp.Close()
	}
}

// checkLeftReport dequeues the one message that the subscription sub of tp
// has left after the app's stop (stats s) and checks that it is a report.
// A message given back, or never fetched, is delivered at once. A delivery
// that the server made to a pull request that the app was cancelling as it
// closed is delivered again when its lease, pubsub.DefaultLease, runs out
// (natspubsub's docs, Delivery). An ack of the app that the server applies
// a moment later leaves nothing to deliver: then the stats must show
// nothing left.
func checkLeftReport(t *testing.T, tp pubsub.Topic, sub string, s admin.Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pubsub.DefaultLease+30*time.Second)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		now, serr := admin.TopicStats(context.Background(), tp)
		if serr != nil || now.Ready+now.Processing+now.Dead != 0 {
			t.Errorf("subscription %s after the stop: %+v, and no message to dequeue (%v); now %+v, %v", sub, s, err, now, serr)
		}
		return
	}
	var e struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(m.Data(), &e); err != nil || e.Type != reportType {
		t.Errorf("subscription %s after the stop: %+v, and the message left is %s, want a %s event", sub, s, m.Data(), reportType)
	}
	t.Logf("subscription %s after the stop: %+v, the message left: %s", sub, s, e.Type)
	if err := m.Ack(context.Background()); err != nil {
		t.Error(err)
	}
}

// rowCounts counts the rows of the message table by subscription, event
// type and status, as "subscription type status". (A named subscription's
// queue is its topic's name, U+001F and its own name.)
func rowCounts(t *testing.T, db *bun.DB) map[string]int {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
		SELECT coalesce(nullif(split_part(topic, chr(31), 2), ''), 'default'),
			convert_from(data, 'UTF8')::jsonb->>'type', status, count(*)
		FROM conveyor_events_all GROUP BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var sub, typ, status string
		var n int
		if err := rows.Scan(&sub, &typ, &status, &n); err != nil {
			t.Fatal(err)
		}
		counts[sub+" "+typ+" "+status] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// checkTable checks that the table holds n finished orders on each
// subscription, and no row in hand or dead: nothing was lost.
func checkTable(t *testing.T, db *bun.DB, n int) {
	t.Helper()
	counts := rowCounts(t, db)
	ok := map[string]bool{}
	for _, sub := range subscriptions {
		for _, k := range []string{placedType + " finished", reportType + " finished", reportType + " pending"} {
			ok[sub+" "+k] = true
		}
	}
	for k, c := range counts {
		if !ok[k] {
			t.Errorf("%d rows %s", c, k)
		}
	}
	for _, sub := range subscriptions {
		if got := counts[sub+" "+placedType+" finished"]; got != n {
			t.Errorf("%d orders finished on subscription %s in the table, want %d (rows by subscription, type and status: %v)", got, sub, n, counts)
		}
	}
}

// process is the app's binary running.
type process struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncbuf.Buffer
	exited chan struct{}
	err    error // Wait's error, once exited is closed
}

// startApp starts the app's binary with env (on top of the test's own
// environment, without any CONVEYOR_ or OTEL_ setting) on a free 127.0.0.1 port and
// returns once it listens. It is killed at the end of the test if it is
// still running.
func startApp(t *testing.T, env ...string) *process {
	t.Helper()
	cmd := exec.Command(appBinary(t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONVEYOR_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "DATABASE_URL=") &&
			!strings.HasPrefix(kv, "NATS_URL=") && !strings.HasPrefix(kv, "KAFKA_BROKERS=") && !strings.HasPrefix(kv, "PORT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CONVEYOR_ADDR=127.0.0.1:0", "CONVEYOR_REPORT_EVERY=200ms", "CONVEYOR_DRAIN_TIMEOUT=20s")
	cmd.Env = append(cmd.Env, env...)
	p := &process{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, r)
	}()
	go func() {
		p.err = cmd.Wait() // after stdout is read to its end
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("the app's log:\n%s", p.stderr)
		}
	})

	select {
	case line := <-lines:
		m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+) — try: curl `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("the app's first line %q does not say where it listens", line)
		}
		p.url = m[1]
	case <-time.After(60 * time.Second):
		t.Fatal("the app did not say where it listens within 60s")
	}
	return p
}

// postOrders posts the orders, a few at a time, each of which must be
// accepted.
func (p *process) postOrders(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, orders)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				body := fmt.Sprintf(`{"item":"item-%d","qty":%d}`, i%7, 1+i%3)
				resp, err := http.Post(p.url+"/orders", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("POST /orders %s: %s %s", body, resp.Status, b)
				}
			}
		})
	}
	for i := range orders {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitHandled waits until GET /stats shows every order handled, and at
// least one periodic report, by both event services, and every order
// counted by analytics.
func (p *process) waitHandled(t *testing.T) {
	p.waitHandledCount(t, map[string]int{"default": orders, "analytics": orders})
}

// waitHandledCount waits until GET /stats shows, for each subscription,
// the given number of orders handled and at least one periodic report, and
// the analytics subscription's number of orders counted by analytics (each
// once: its listener claims them in the inbox).
func (p *process) waitHandledCount(t *testing.T, want map[string]int) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(waitHandled); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(p.url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		var s struct {
			Handled   map[string]map[string]int `json:"handled"`
			Failed    map[string]map[string]int `json:"failed"`
			Analytics struct {
				Orders int `json:"orders"`
			} `json:"analytics"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &s) != nil {
			t.Fatalf("GET /stats: %s %s", resp.Status, b)
		}
		if len(s.Failed) > 0 {
			t.Fatalf("events failed: %s", b)
		}
		done := true
		for sub, n := range want {
			if got := s.Handled[sub][placedType]; got > n {
				t.Fatalf("more orders handled on subscription %s than %d: %s", sub, n, b)
			}
			done = done && s.Handled[sub][placedType] == n && s.Handled[sub][reportType] > 0
		}
		if s.Analytics.Orders > want["analytics"] {
			t.Fatalf("analytics counted more orders than %d: %s", want["analytics"], b)
		}
		if done && s.Analytics.Orders == want["analytics"] {
			return
		}
	}
	t.Fatalf("after %v the stats do not show the orders %v and a report handled on each subscription, and the analytics orders counted: %s", waitHandled, want, last)
}

// stop sends SIGTERM and checks that the app exits 0 and logged no error.
// (Warnings are allowed: on a loaded machine the scheduler may say that it
// skips a tick of its 200ms period.)
func (p *process) stop(t *testing.T) {
	t.Helper()
	p.stopWith(t, syscall.SIGTERM)
}

// stopWith is stop with the signal sig.
func (p *process) stopWith(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the app did not exit within 30s of %v", sig)
	}
	if p.err != nil {
		t.Fatalf("the app exited with %v, want exit code 0", p.err)
	}
	if strings.Contains(p.stderr.String(), "level=ERROR") {
		t.Errorf("the app logged errors")
	}
	p.stoppedLine(t)
}

// stoppedLine returns the line the app logs when it has stopped.
func (p *process) stoppedLine(t *testing.T) string {
	t.Helper()
	for line := range strings.Lines(p.stderr.String()) {
		if strings.Contains(line, "msg=stopped") {
			return line
		}
	}
	t.Fatal("the app did not log that it stopped")
	return ""
}
