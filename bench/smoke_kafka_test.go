package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSmokeKafka runs the Kafka systems on their scenarios with tiny
// numbers, once, on $KAFKA_BROKERS or else a kfake cluster the run starts
// in this process; every system must handle every message within the
// run cap, and the report must have the Kafka targets and cluster.
func TestSmokeKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("the Kafka smoke run takes ~30 s")
	}
	cfg := defaultConfig()
	cfg.Systems = "kafka"
	cfg.N = 200
	cfg.Reps = 1
	cfg.MinTime = 0
	cfg.BatchSize = 50
	cfg.LatencyFor = time.Second
	cfg.MaxRun = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Systems {
		if s.Kind != KindKafka {
			t.Errorf("system %s of kind %s ran, want the Kafka systems only", s.Name, s.Kind)
		}
		names = append(names, s.Name)
	}
	for _, want := range []string{"conveyor kafkapubsub", "conveyor kafkapubsub (consumer groups)", "watermill-kafka", "baseline: kafka franz-go"} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Errorf("%s did not run (ran: %q)", want, names)
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
	var goals []string
	for _, tg := range rep.Targets {
		if tg.Kind != KindKafka {
			t.Errorf("target %q of kind %q in a run of the Kafka systems", tg.Goal, tg.Kind)
		}
		goals = append(goals, tg.Goal)
	}
	// for each mode: enqueue, drain and fan-out against the baseline and
	// watermill-kafka, and the latency
	if len(goals) != 14 {
		t.Errorf("%d Kafka targets checked, want 14: %q", len(goals), goals)
	}
	if rep.Kafka["brokers"] == "" {
		t.Errorf("the report does not name the Kafka cluster: %v", rep.Kafka)
	}
	var table bytes.Buffer
	rep.writeTable(&table)
	t.Logf("\n%s", table.String())
}
