package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/conveyorgo/conveyor/template/app/orders"
)

// testConfig is the in-memory configuration, with a fast sales report.
func testConfig() Config {
	return Config{
		Addr:         "127.0.0.1:0",
		Backend:      BackendMem,
		Workers:      4,
		ReportEvery:  50 * time.Millisecond,
		DrainTimeout: 5 * time.Second,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
		IdleTimeout:  DefaultIdleTimeout,
		LogLevel:     slog.LevelInfo,
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func TestApp(t *testing.T) {
	app, err := bootstrap(context.Background(), testConfig(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	stopped := false
	defer func() {
		if !stopped {
			app.Shutdown()
		}
	}()

	t.Run("Order", func(t *testing.T) {
		for i := range 3 {
			ct := "application/json"
			if i == 0 {
				ct = "application/json; charset=utf-8"
			}
			code, body := post(t, srv.URL+"/orders", ct, `{"item":"book","qty":2}`)
			if code != http.StatusAccepted || body["order_id"] == "" {
				t.Fatalf("POST /orders: %d %v", code, body)
			}
		}
	})
	t.Run("BadOrders", func(t *testing.T) {
		for _, c := range []struct{ body, want string }{
			{`{"item":"book"}`, `"qty"`},
			{`{"qty":1}`, `"item"`},
			{`{"item":"book","qty":1,"color":"red"}`, "color"},
			{`item=book`, `{"item":"book","qty":1}`},
			{`{"item":"book","qty":1} garbage`, "data after the JSON object"},
			{`{"item":"book","qty":1}{"item":"pen","qty":1}`, "data after the JSON object"},
			{`{"item":"book","qty":1}{}`, "data after the JSON object"},
			{`{"item":"book","qty":1}]`, "data after the JSON object"},
		} {
			code, body := do(t, "POST", srv.URL+"/orders", c.body)
			if code != http.StatusBadRequest || !strings.Contains(body["error"].(string), c.want) {
				t.Errorf("POST /orders %s: %d %v, want 400 mentioning %s", c.body, code, body, c.want)
			}
		}
	})
	t.Run("NotJSON", func(t *testing.T) {
		// A browser posts these cross-site without asking: they must not
		// place an order.
		for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8",
			"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
			code, body := post(t, srv.URL+"/orders", ct, `{"item":"book","qty":1}`)
			if msg, _ := body["error"].(string); code != http.StatusUnsupportedMediaType || !strings.Contains(msg, "want Content-Type: application/json") {
				t.Errorf("POST /orders with Content-Type %q: %d %v, want 415 asking for application/json", ct, code, body)
			}
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		big := `{"item":"` + strings.Repeat("a", maxOrderBytes) + `","qty":1}`
		if code, body := post(t, srv.URL+"/orders", "application/json", big); code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST /orders of %d bytes: %d %v, want 413", len(big), code, body)
		}
		trailing := `{"item":"book","qty":1}` + strings.Repeat(" ", maxOrderBytes)
		if code, body := post(t, srv.URL+"/orders", "application/json", trailing); code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST /orders with %d bytes of trailing spaces: %d %v, want 413", maxOrderBytes, code, body)
		}
	})
	t.Run("Index", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(b)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /: %s %q, want 200 and an HTML page", resp.Status, resp.Header.Get("Content-Type"))
		}
		host := strings.TrimPrefix(srv.URL, "http://")
		for _, want := range []string{"POST /orders", "GET /stats", "GET /healthz", "GET /metrics",
			"curl -X POST http://" + host + "/orders -H 'Content-Type: application/json' -d '{\"item\":\"book\",\"qty\":1}'"} {
			if !strings.Contains(page, want) {
				t.Errorf("GET / does not show %q:\n%s", want, page)
			}
		}
		for _, external := range []string{"<script", "<link", "<img", "<style", "src=", "http://" + "www", "https://"} {
			if strings.Contains(page, external) {
				t.Errorf("GET / has %q: want a plain page with nothing loaded from elsewhere", external)
			}
		}
		resp, err = http.Get(srv.URL + "/nothing-here")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /nothing-here: %s, want 404", resp.Status)
		}
	})
	t.Run("Health", func(t *testing.T) {
		if code, body := do(t, "GET", srv.URL+"/healthz", ""); code != http.StatusOK || body["status"] != "ok" {
			t.Errorf("GET /healthz: %d %v", code, body)
		}
	})
	t.Run("Stats", func(t *testing.T) {
		// Both services get every event: fulfilment on the topic's default
		// subscription, analytics on its own.
		var body map[string]any
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var code int
			code, body = do(t, "GET", srv.URL+"/stats", "")
			if code != http.StatusOK {
				t.Fatalf("GET /stats: %d %v", code, body)
			}
			handled := body["handled"].(map[string]any)
			done := body["analytics"].(map[string]any)["orders"] == 3.0
			for _, sub := range []string{"default", orders.AnalyticsSubscription} {
				byType, _ := handled[sub].(map[string]any)
				done = done && byType[string(orders.PlacedType)] == 3.0 && byType[string(orders.ReportDueType)] != nil
			}
			if !done {
				continue
			}
			queue := body["queue"].(map[string]any)
			subs, _ := queue["subscriptions"].(map[string]any)
			if body["backend"] != "mem" || queue["topic"] != "orders" || subs["default"] == nil || subs[orders.AnalyticsSubscription] == nil ||
				body["analytics"].(map[string]any)["units"] != 6.0 {
				t.Errorf("stats: %v", body)
			}
			return
		}
		t.Fatalf("the stats never showed 3 orders and a report handled by both services, and 3 orders counted: %v", body)
	})
	t.Run("Metrics", func(t *testing.T) {
		// GET /metrics shows, in the Prometheus text format, the orders
		// acked on each subscription (the last ack may follow its listener
		// by a moment).
		var acked map[string]float64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			acked = ackedMetric(t, srv.URL)
			if acked["default"] >= 3 && acked[orders.AnalyticsSubscription] >= 3 {
				return
			}
		}
		t.Fatalf("conveyor_messages_acked_total by subscription of topic %s: %v, want at least the 3 orders on default and %s",
			orders.Topic, acked, orders.AnalyticsSubscription)
	})

	srv.Close()
	stopped = true
	if err := app.Shutdown(); err != nil {
		t.Fatal(err)
	}
	handled, _ := app.stats.Counts()
	if handled["default"][orders.PlacedType] != 3 || handled[orders.AnalyticsSubscription][orders.PlacedType] != 3 {
		t.Errorf("handled %v after shutdown, want 3 orders on each subscription", handled)
	}
}

// TestRun runs the app as main does and stops it as a signal would.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, testConfig(), testLogger(t), pw)
		pw.Close()
	}()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+) — try: curl -X POST (\S+)/orders -H 'Content-Type: application/json' -d '(.*)'\n$`).FindStringSubmatch(line)
	if m == nil || m[1] != m[2] {
		t.Fatalf("first line %q: want where it listens and a curl line to try", line)
	}
	if code, body := do(t, "POST", m[1]+"/orders", m[3]); code != http.StatusAccepted {
		t.Errorf("the curl line's order: %d %v", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its ctx ended")
	}
}

// ackedMetric reads GET /metrics and returns the value of the counter
// conveyor_messages_acked_total of each subscription of the orders topic.
func ackedMetric(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s %q, want 200 and the text format", resp.Status, resp.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	acked := map[string]float64{}
	for _, m := range families["conveyor_messages_acked_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["messaging_destination_name"] == orders.Topic {
			acked[labels["messaging_consumer_group_name"]] = m.GetCounter().GetValue()
		}
	}
	return acked
}

// TestTimeouts checks that the server run starts closes the connections
// of clients that send a body too slowly or stay idle between requests.
func TestTimeouts(t *testing.T) {
	cfg := testConfig()
	cfg.ReadTimeout = 300 * time.Millisecond
	cfg.IdleTimeout = 300 * time.Millisecond
	cfg.WriteTimeout = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, testLogger(t), pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr := regexp.MustCompile(`^listening on http://(\S+) `).FindStringSubmatch(line)
	if addr == nil {
		t.Fatalf("first line %q: want where it listens", line)
	}

	for _, c := range []struct{ name, send string }{
		{"SlowBody", "POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"},
		{"SlowHeaders", "GET /healthz HTTP/1.1\r\nHost: x\r\n"},
		{"Idle", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"}, // answered, then kept alive
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr[1])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.send); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			conn.SetReadDeadline(start.Add(3 * time.Second))
			_, err = io.Copy(io.Discard, conn) // until the server closes the connection
			if err != nil {
				t.Fatalf("the server kept the connection open for %v: %v", time.Since(start).Round(time.Millisecond), err)
			}
		})
	}
}

// do sends a request, with a JSON body if any, and decodes the JSON
// answer.
func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(t, req)
}

// post posts body with the Content-Type ct (none if empty) and decodes the
// JSON answer.
func post(t *testing.T, url, ct, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	method, url := req.Method, req.URL.String()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: %d, body not JSON: %v", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, v
}
