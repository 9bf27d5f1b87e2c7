package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

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
	srv := httptest.NewServer(app.handlers.Routes())
	defer srv.Close()
	stopped := false
	defer func() {
		if !stopped {
			app.Shutdown()
		}
	}()

	t.Run("Order", func(t *testing.T) {
		for range 3 {
			code, body := do(t, "POST", srv.URL+"/orders", `{"item":"book","qty":2}`)
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
		} {
			code, body := do(t, "POST", srv.URL+"/orders", c.body)
			if code != http.StatusBadRequest || !strings.Contains(body["error"].(string), c.want) {
				t.Errorf("POST /orders %s: %d %v, want 400 mentioning %s", c.body, code, body, c.want)
			}
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
	m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+) — try: curl -X POST (\S+)/orders -d '(.*)'\n$`).FindStringSubmatch(line)
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

func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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
