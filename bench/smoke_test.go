package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the backlog scenario's consumer
// process, as the bench binary does.
func TestMain(m *testing.M) {
	if isBacklogChild() {
		os.Exit(backlogChild())
	}
	os.Exit(m.Run())
}

// TestSmoke runs every system but the NATS ones (TestSmokeNATS) on every
// scenario with tiny numbers, once, so the harness cannot rot. It needs a
// PostgreSQL server, as make test gives:
//
//	cd bench && ../scripts/with-postgres.sh go test -count=1 ./...
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the smoke run takes ~30 s and a PostgreSQL server")
	}
	cfg := defaultConfig()
	cfg.SkipSystems = "nats"
	cfg.N = 200
	cfg.RoundtripN = 2_000
	cfg.EventsN = 2_000
	cfg.Reps = 1
	cfg.MinTime = 0
	cfg.BatchSize = 50
	cfg.LatencyFor = time.Second
	cfg.MaxRun = 2 * time.Second
	cfg.Backlog = 2_000
	cfg.BacklogMax = 30 * time.Second
	cfg.SQLiteN = 200
	cfg.SQLiteLatencyFor = time.Second
	cfg.SQLiteBacklog = 2_000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}

	checkRanAll(t, rep, cfg)
	// The baselines, which nothing caps, measured every message.
	for _, sc := range []string{ScEnqueue, ScBatch, ScDrain} {
		if r := find(rep.Results, "baseline: SKIP LOCKED loop", sc); r != nil && r.Runs[0].Count != int64(cfg.N) {
			t.Errorf("baseline %s: %d messages, want %d", sc, r.Runs[0].Count, cfg.N)
		}
	}
	for _, sc := range []string{ScEnqueue, ScBatch, ScDrain} {
		if r := find(rep.Results, "baseline: SQLite loop", sc); r == nil || r.Runs[0].Count != int64(cfg.SQLiteN) {
			t.Errorf("SQLite baseline %s: got %+v, want %d messages", sc, r, cfg.SQLiteN)
		}
	}
	if r := find(rep.Results, "conveyor sqlitepubsub", ScBacklog); r == nil || r.Backlog == nil ||
		r.Backlog.Messages != int64(cfg.SQLiteBacklog) || r.Backlog.SmallN != int64(cfg.SQLiteN) || r.Backlog.PeakRSSMB <= 0 {
		t.Errorf("SQLite backlog: got %+v, want %d messages drained by a child with a peak RSS", r, cfg.SQLiteBacklog)
	}
	// The SQLite targets of issue 34, each with a reason should it be
	// missed.
	sqliteTargets := 0
	for _, tg := range rep.Targets {
		if tg.Kind == KindSQLite {
			sqliteTargets++
			if why(tg.Goal) == "" {
				t.Errorf("target %q has no reason in missed.go", tg.Goal)
			}
		}
	}
	if sqliteTargets != 5 {
		t.Errorf("%d SQLite targets checked, want 5 (enqueue and drain against River, drain against the loop, p99, backlog): %+v", sqliteTargets, rep.Targets)
	}
	if r := find(rep.Results, "baseline: JSON over a Go channel", ScEvents); r == nil || r.Runs[0].Count != int64(cfg.EventsN) {
		t.Errorf("events baseline: got %+v, want %d events", r, cfg.EventsN)
	}
	if r := find(rep.Results, "conveyor dbpubsub", ScBacklog); r == nil || r.Backlog == nil ||
		r.Backlog.Messages != int64(cfg.Backlog) || r.Backlog.PeakRSSMB <= 0 {
		t.Errorf("backlog: got %+v, want %d messages drained by a child with a peak RSS", r, cfg.Backlog)
	}
	// The fan-out: every subscription got every message (conveyor's
	// through pubsub.Subscribe on dbpubsub, not "no subscriptions"); the
	// publisher alone published them all.
	for _, name := range []string{"conveyor dbpubsub", "conveyor dbpubsub (ConfirmAck)", "watermill-sql"} {
		if r := find(rep.Results, name, ScFanOut); r == nil || r.Subs != fanOutSubs || r.Runs[0].Count != int64(fanOutSubs*cfg.N) || r.Publish <= 0 {
			t.Errorf("%s fan-out: got %+v, want %d deliveries to %d subscriptions and a publish rate", name, r, fanOutSubs*cfg.N, fanOutSubs)
		}
	}
	if r := find(rep.Results, "conveyor dbpubsub (no subscriptions)", ScFanOut); r == nil || r.Runs[0].Count != int64(cfg.N) || r.Publish <= 0 {
		t.Errorf("conveyor fan-out without subscriptions: got %+v, want %d messages published", r, cfg.N)
	}
	wide := fmt.Sprintf("conveyor dbpubsub (%d subscriptions)", manyFanOutSubs)
	if r := find(rep.Results, wide, ScFanOut); r == nil || r.Subs != manyFanOutSubs || r.Runs[0].Count != int64(manyFanOutSubs*cfg.N) || r.Publish <= 0 {
		t.Errorf("%s fan-out: got %+v, want %d deliveries to %d subscriptions and a publish rate", wide, r, manyFanOutSubs*cfg.N, manyFanOutSubs)
	}
	if len(rep.Targets) == 0 {
		t.Error("no target of conveyor was checked")
	}
	fanOutTargets := 0
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Goal, "fan-out") {
			fanOutTargets++
		}
	}
	if fanOutTargets != 3 {
		t.Errorf("%d fan-out targets checked, want 3 (delivered against watermill-sql, publish with 4 and with 16 subscriptions against none): %+v", fanOutTargets, rep.Targets)
	}
	// The OTel overhead lines: each OTel system against the same system
	// unwrapped, each with a reason should it be missed.
	otelTargets := 0
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Goal, "OTel overhead") {
			otelTargets++
			if why(tg.Goal) == "" {
				t.Errorf("target %q has no reason in missed.go", tg.Goal)
			}
		}
	}
	if tg := findTarget(rep.Targets, "OTel cost at 1% sampling"); tg == nil || why(tg.Goal) == "" {
		t.Errorf("the OTel cost per message was not checked, or has no reason in missed.go: %+v", tg)
	}
	if otelTargets != 4 {
		t.Errorf("%d OTel overhead targets checked, want 4 (channelpubsub round trip, dbpubsub drain, each with every message and 1%% sampled): %+v", otelTargets, rep.Targets)
	}

	// The outputs.
	var table bytes.Buffer
	rep.writeTable(&table)
	t.Logf("\n%s", table.String())
	for _, want := range []string{"conveyor dbpubsub", "river (tuned)", "watermill-sql", "gocloud mempubsub", "pgbench",
		"conveyor event (channelpubsub)", "watermill cqrs (watermill-sql)", "7. events/s", "8. fan-out",
		"conveyor channelpubsub (OTel)", "conveyor dbpubsub (OTel)", "conveyor sqlitepubsub", "river sqlite (tuned)", "baseline: SQLite loop"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	dir := t.TempDir()
	path, err := rep.writeJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "latest.json")); err != nil {
		t.Error(err)
	}
	secs, err := sectionsFor(rep, path)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	writeMarkdown(&md, secs)
	for _, want := range []string{"# Benchmarks", "| system |", "### Configurations", "### PostgreSQL server", "## Reproduce",
		"7. **events**", "8. **fan-out**", "in-memory events: 2000", "## SQLite (embedded)", "synchronous=FULL", "conveyor's targets on SQLite"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
}

// checkRanAll checks that every system cfg wants ran every scenario that
// applies to it, without error, at a positive rate.
func checkRanAll(t *testing.T, rep *Report, cfg Config) {
	t.Helper()
	for _, s := range orderedSystems() {
		if !cfg.wantSystem(s.Name()) {
			continue
		}
		for _, sc := range scenarioOrder {
			if ok, _ := applicable(s, sc); !ok {
				continue
			}
			r := find(rep.Results, s.Name(), sc)
			if r == nil {
				var msg string
				for _, x := range rep.Results {
					if x.System == s.Name() && x.Scenario == sc {
						msg = x.Err
					}
				}
				if lacksAbility(msg) {
					continue
				}
				t.Errorf("%s, %s: no result (%s)", s.Name(), sc, msg)
				continue
			}
			if r.Median <= 0 || r.Runs[0].Count <= 0 {
				t.Errorf("%s, %s: median %v over %d messages, want a positive rate", s.Name(), sc, r.Median, r.Runs[0].Count)
			}
		}
	}
}

// TestEventSystems checks that each event system hands every event to the
// handler once, intact (Order.msg checks the fields the Msg does not carry).
// It needs PostgreSQL, as TestSmoke does.
func TestEventSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := newEnv(ctx, KindPostgres)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	cfg := defaultConfig()
	const n = 300
	for _, s := range orderedSystems() {
		if ok, _ := applicable(s, ScEvents); !ok {
			continue
		}
		t.Run(s.Name(), func(t *testing.T) {
			inst, err := s.Open(ctx, env, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := inst.Close(); err != nil {
					t.Error(err)
				}
			}()
			got := make(chan Msg, 2*n)
			cctx, stopConsumers := context.WithCancel(ctx)
			stop, err := inst.Consume(cctx, cfg.W, func(m Msg) { got <- m }, func() {})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				stopConsumers()
				if err := stop(); err != nil {
					t.Error(err)
				}
			}()
			for i := range int64(n) {
				if err := inst.Enqueue(ctx, Msg{N: i + 1, T: 1764417600000000000 + i}); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[int64]int{}
			for len(seen) < n {
				select {
				case m := <-got:
					if m.N < 1 || m.N > n || m.T != 1764417600000000000+m.N-1 {
						t.Fatalf("handled %+v, not an event that was dispatched (or garbled)", m)
					}
					seen[m.N]++
				case <-ctx.Done():
					t.Fatalf("%d of %d events handled before the test's deadline", len(seen), n)
				}
			}
			for id, k := range seen {
				if k > 1 {
					t.Errorf("event %d handled %d times", id, k)
				}
			}
		})
	}
}

// TestRepsUntilMinTime checks that a scenario is repeated past -reps while
// a system's timed runs add up to less than -min-time, up to -max-reps, and
// exactly -reps times without -min-time.
func TestRepsUntilMinTime(t *testing.T) {
	for _, tc := range []struct {
		name          string
		minTime       time.Duration
		reps, maxReps int
		want          int
	}{
		{"no min time", 0, 2, 5, 2},
		{"min time never reached", time.Hour, 2, 5, 5},
		{"min time reached at once", time.Nanosecond, 2, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Systems, cfg.Scenarios = "raw Go channel", ScRoundtrip
			cfg.RoundtripN = 1_000
			cfg.Reps, cfg.MinTime, cfg.MaxReps = tc.reps, tc.minTime, tc.maxReps
			rep, err := run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 {
				t.Fatalf("%d results, want 1 (the raw channel's round trip)", len(rep.Results))
			}
			if got := len(rep.Results[0].Runs); got != tc.want {
				t.Errorf("%d repetitions, want %d", got, tc.want)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	for _, m := range []Msg{{}, {N: 1, T: 2}, {N: 123456789, T: 1764417600000000000}, {N: -1, T: -5}} {
		if got := parsePayload(payload(m)); got != m {
			t.Errorf("parsePayload(payload(%+v)) = %+v", m, got)
		}
	}
	if got := parsePayload([]byte(`{"n": 7, "t": 9}`)); got != (Msg{N: 7, T: 9}) {
		t.Errorf("with spaces: %+v", got)
	}
}

func TestMedianAndPercentile(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	if got := pct(ds, 50); got != 50*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := pct(ds, 99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
}

// findTarget returns the target whose goal begins with prefix, or nil.
func findTarget(ts []Target, prefix string) *Target {
	for i := range ts {
		if strings.HasPrefix(ts[i].Goal, prefix) {
			return &ts[i]
		}
	}
	return nil
}
