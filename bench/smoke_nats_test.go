package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSmokeNATS runs the NATS systems on their scenarios with tiny numbers,
// once, against a real NATS server with JetStream: $NATS_URL, as make test
// sets it through scripts/with-nats.sh, else 127.0.0.1:4222. Without a
// server it fails, as TestSmoke does without PostgreSQL:
//
//	cd bench && ../scripts/with-nats.sh go test -count=1 -run NATS ./...
func TestSmokeNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("the NATS smoke run takes ~30 s and a NATS server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// enqueue and drain against the baseline and watermill-nats, batch
	// enqueue and fan-out against the baseline, and the latency
	rep := smokeKind(t, ctx, KindNATS, "nats", 5*time.Second,
		[]string{"conveyor natspubsub", "watermill-nats (defaults)", "watermill-nats (watermill-benchmark)", "baseline: nats.go JetStream"}, 7)
	if rep.NATS["server_version"] == "" {
		t.Errorf("the NATS server's settings lack its version: %v", rep.NATS)
	}
	if rep.Postgres != nil {
		t.Errorf("PostgreSQL settings in a run without PostgreSQL: %v", rep.Postgres)
	}
	checkStreamsDeleted(t, ctx, rep.NATS["stream prefix of this run"])

	var table bytes.Buffer
	rep.writeTable(&table)
	t.Logf("\n%s", table.String())

	// BENCHMARKS.md: the NATS section from this run, the other one kept
	// from the newest earlier results that have it.
	dir := t.TempDir()
	earlier := &Report{Started: rep.Started.Add(-time.Hour), Took: "9m", Command: "make bench", Config: defaultConfig(),
		Postgres: map[string]string{"server_version": "18.0"},
		Systems:  []SystemInfo{{Name: "baseline: SKIP LOCKED loop", Kind: KindPostgres, Config: "pgx"}},
		Results: []Result{{System: "baseline: SKIP LOCKED loop", Kind: KindPostgres, Scenario: ScEnqueue, Unit: "msgs/s",
			Runs: []Run{{Value: 1234, Count: 20000}}, Median: 1234}},
		Targets: []Target{{Goal: "single enqueue ≥ 0.9× baseline", Actual: "x", Met: true}}}
	b, err := json.Marshal(earlier)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, earlier.Started.UTC().Format("20060102T150405Z")+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := rep.writeJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := sectionsFor(rep, path)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	writeMarkdown(&md, secs)
	out := md.String()
	pg, nats, ok := strings.Cut(out, "## NATS JetStream")
	if !ok {
		t.Fatalf("BENCHMARKS.md has no NATS section:\n%s", out)
	}
	for _, want := range []string{"## PostgreSQL and in memory", "started by `make bench`", "| baseline: SKIP LOCKED loop | 1,234 |",
		"single enqueue ≥ 0.9× baseline", "### PostgreSQL server", earlier.Started.UTC().Format("2006-01-02 15:04 MST")} {
		if !strings.Contains(pg, want) {
			t.Errorf("the kept section lacks %q:\n%s", want, pg)
		}
	}
	for _, want := range []string{"started by `" + rep.Command + "`", rep.Started.UTC().Format("2006-01-02 15:04 MST"),
		"| conveyor natspubsub |", "### conveyor's targets on NATS", "NATS latency p99", "### NATS server", "server_version",
		filepath.ToSlash(path)} {
		if !strings.Contains(nats, want) {
			t.Errorf("the NATS section lacks %q:\n%s", want, nats)
		}
	}
	if strings.Contains(nats, "SKIP LOCKED") || strings.Contains(pg, "natspubsub") {
		t.Errorf("a section shows the other's systems:\n%s", out)
	}
}

// checkStreamsDeleted checks that no stream of the run (of prefix) is left
// on the server: each instance deletes its own when it closes.
func checkStreamsDeleted(t *testing.T, ctx context.Context, prefix string) {
	t.Helper()
	if !strings.HasPrefix(prefix, "bench_") {
		t.Fatalf("the run's stream prefix is %q, want bench_<random>_", prefix)
	}
	env, err := newEnv(ctx, KindNATS)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	names := env.NATS.js.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, prefix) {
			t.Errorf("stream %s was left behind", name)
		}
	}
	if err := names.Err(); err != nil {
		t.Error(err)
	}
}

// smokeKind runs the systems matching systems, all of kind, on their
// scenarios with tiny numbers, once, and checks what the smoke runs of
// every kind want: the systems of want ran, each scenario measured every
// message within maxRun (the per-item fallback of a batch enqueue too),
// the latency lost none, each fan-out subscription got every message, and
// the report has goals targets, all of kind.
func smokeKind(t *testing.T, ctx context.Context, kind Kind, systems string, maxRun time.Duration, want []string, goals int) *Report {
	t.Helper()
	cfg := defaultConfig()
	cfg.Systems = systems
	cfg.N = 200
	cfg.Reps = 1
	cfg.MinTime = 0
	cfg.BatchSize = 50
	cfg.LatencyFor = time.Second
	cfg.MaxRun = maxRun
	rep, err := run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Systems {
		if s.Kind != kind {
			t.Errorf("system %s of kind %s ran, want the %s systems only", s.Name, s.Kind, kind)
		}
		names = append(names, s.Name)
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("%s did not run (ran: %q)", w, names)
		}
	}
	checkRanAll(t, rep, cfg)
	for _, name := range names {
		for _, sc := range []string{ScEnqueue, ScBatch, ScDrain} {
			if r := find(rep.Results, name, sc); r == nil || r.Runs[0].Count != int64(cfg.N) {
				t.Errorf("%s, %s: got %+v, want %d messages", name, sc, r, cfg.N)
			}
		}
		if r := find(rep.Results, name, ScLatency); r == nil || r.Lost > 0 || r.P99 <= 0 {
			t.Errorf("%s, latency: got %+v, want every message handled and a p99", name, r)
		}
		if r := find(rep.Results, name, ScFanOut); r == nil || r.Subs != fanOutSubs || r.Runs[0].Count != int64(fanOutSubs*cfg.N) || r.Publish <= 0 {
			t.Errorf("%s fan-out: got %+v, want %d deliveries to %d subscriptions and a publish rate", name, r, fanOutSubs*cfg.N, fanOutSubs)
		}
	}
	var got []string
	for _, tg := range rep.Targets {
		if tg.Kind != kind {
			t.Errorf("target %q of kind %q in a run of the %s systems", tg.Goal, tg.Kind, kind)
		}
		got = append(got, tg.Goal)
	}
	if len(got) != goals {
		t.Errorf("%d %s targets checked, want %d: %q", len(got), kind, goals, got)
	}
	return rep
}
