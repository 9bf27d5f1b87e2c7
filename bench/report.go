package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Result is one system on one scenario: every repetition and the median.
type Result struct {
	System   string        `json:"system"`
	Kind     Kind          `json:"kind"`
	Scenario string        `json:"scenario"`
	Unit     string        `json:"unit"`
	Runs     []Run         `json:"runs"`
	Median   float64       `json:"median"`
	P50      float64       `json:"p50_ms,omitempty"`
	P90      float64       `json:"p90_ms,omitempty"`
	P99      float64       `json:"p99_ms,omitempty"`
	Ratio    float64       `json:"ratio_to_baseline,omitempty"`
	Capped   bool          `json:"capped,omitempty"`
	Lost     int64         `json:"lost,omitempty"` // latency: most messages one run did not see handled in time
	Err      string        `json:"error,omitempty"`
	Backlog  *BacklogStats `json:"backlog,omitempty"`
	Publish  float64       `json:"publish_msgs_s,omitempty"` // fan-out: median publish rate (Median: delivered)
	Subs     int           `json:"subscriptions,omitempty"`  // fan-out: subscriptions made
	CPU      float64       `json:"cpu_us_per_msg,omitempty"` // round trip, events: median CPU µs a message (Run.CPU)
	baseline bool
}

// Target is one of the goals for conveyor, checked on this run.
type Target struct {
	Goal   string `json:"goal"`
	Actual string `json:"actual"`
	Met    bool   `json:"met"`
	// Kind is that of the systems it compares; "" (runs before NATS) is
	// KindPostgres.
	Kind Kind `json:"kind,omitempty"`
}

// kind is t's Kind, KindPostgres when not recorded.
func (t Target) kind() Kind {
	if t.Kind == "" {
		return KindPostgres
	}
	return t.Kind
}

// SystemInfo is a system's configuration, printed beside its numbers.
type SystemInfo struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Config string `json:"config"`
}

// Report is everything one run produced; it is saved as JSON and rendered
// as the table and BENCHMARKS.md.
type Report struct {
	Started time.Time `json:"started"`
	Took    string    `json:"took"`
	// Command is how the run was started ("" in runs before it was kept).
	Command  string            `json:"command,omitempty"`
	Config   Config            `json:"config"`
	Machine  map[string]string `json:"machine"`
	Postgres map[string]string `json:"postgres"`
	NATS     map[string]string `json:"nats,omitempty"`
	Kafka    map[string]string `json:"kafka,omitempty"`
	Systems  []SystemInfo      `json:"systems"`
	Results  []Result          `json:"results"`
	Targets  []Target          `json:"targets"`
}

func unitOf(sc string) string {
	switch sc {
	case ScLatency:
		return "ms"
	case ScPgbench:
		return "tps"
	case ScEvents:
		return "events/s"
	}
	return "msgs/s"
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// summarize fills the medians of r from its runs.
func (r *Result) summarize() {
	var v, p50, p90, p99, pub, cpu []float64
	for _, run := range r.Runs {
		v = append(v, run.Value)
		cpu = append(cpu, run.CPU)
		pub = append(pub, run.Publish)
		r.Subs = run.Subs
		p50 = append(p50, run.P50)
		p90 = append(p90, run.P90)
		p99 = append(p99, run.P99)
		r.Capped = r.Capped || run.Capped
		r.Lost = max(r.Lost, run.Lost)
	}
	r.Median = median(v)
	r.CPU = median(cpu)
	if r.Scenario == ScLatency {
		r.P50, r.P90, r.P99 = median(p50), median(p90), median(p99)
	}
	if r.Scenario == ScFanOut {
		r.Publish = median(pub)
	}
	if r.Scenario == ScBacklog && len(r.Runs) > 0 {
		// The run whose drain rate is the median.
		best := r.Runs[0]
		for _, run := range r.Runs {
			if math.Abs(run.Value-r.Median) < math.Abs(best.Value-r.Median) {
				best = run
			}
		}
		r.Backlog = best.Backlog
	}
}

// ratios sets each result's ratio to the baseline of its kind on the same
// scenario (for latency, the baseline's p50 over the system's: above 1 is
// faster).
func ratios(results []Result) {
	base := map[string]float64{}
	for _, r := range results {
		if r.baseline && r.Err == "" {
			base[string(r.Kind)+"/"+r.Scenario] = r.Median
		}
	}
	for i := range results {
		r := &results[i]
		b, ok := base[string(r.Kind)+"/"+r.Scenario]
		if !ok || r.Median == 0 || r.Err != "" {
			continue
		}
		if r.Scenario == ScLatency {
			r.Ratio = b / r.Median
		} else {
			r.Ratio = r.Median / b
		}
	}
}

func find(results []Result, system, sc string) *Result {
	for i := range results {
		if results[i].System == system && results[i].Scenario == sc && results[i].Err == "" && len(results[i].Runs) > 0 {
			return &results[i]
		}
	}
	return nil
}

// targets checks the goals for conveyor against this run.
func targets(results []Result) []Target {
	var ts []Target
	add := func(goal string, ok bool, format string, args ...any) {
		ts = append(ts, Target{Goal: goal, Met: ok, Actual: fmt.Sprintf(format, args...)})
	}
	const db, base = "conveyor dbpubsub", "baseline: SKIP LOCKED loop"
	peerBest := func(sc string) (string, float64) {
		name, v := "", 0.0
		for _, r := range results {
			if r.Kind == KindPostgres && r.Scenario == sc && !strings.HasPrefix(r.System, "conveyor") && r.Err == "" && r.Median > v {
				name, v = r.System, r.Median
			}
		}
		return name, v
	}
	// conveyors are the results of every configuration of conveyor's on sc
	// in the run (with subscriptions, on the fan-out), best first.
	type conf struct {
		name string
		v    float64
	}
	conveyors := func(sc string, value func(Result) float64) []conf {
		var cs []conf
		for _, r := range results {
			if strings.HasPrefix(r.System, db) && r.Scenario == sc && r.Err == "" && len(r.Runs) > 0 && (sc != ScFanOut || r.Subs == fanOutSubs) {
				cs = append(cs, conf{r.System, value(r)})
			}
		}
		slices.SortFunc(cs, func(a, b conf) int { return cmp.Compare(b.v, a.v) })
		return cs
	}
	// against lists cs as ratios to v.
	against := func(cs []conf, v float64) string {
		parts := make([]string, len(cs))
		for i, c := range cs {
			parts[i] = fmt.Sprintf("%s %s msgs/s = %.2f×", c.name, num(c.v), c.v/v)
		}
		return strings.Join(parts, "; ")
	}
	byMedian := func(r Result) float64 { return r.Median }
	if name, v := peerBest(ScDrain); v > 0 {
		if c := find(results, db, ScDrain); c != nil {
			add("drain ≥ 1.5× the fastest peer configuration (defaults)", c.Median >= 1.5*v, "fastest peer %s (%s); %s",
				name, num(v), against(conveyors(ScDrain, byMedian), v))
		}
	}
	if c, b := find(results, db, ScEnqueue), find(results, base, ScEnqueue); c != nil && b != nil {
		add("single enqueue ≥ 0.9× baseline", c.Median >= 0.9*b.Median, "%s msgs/s = %.2f× baseline (%s)", num(c.Median), c.Median/b.Median, num(b.Median))
	}
	if c := find(results, db, ScEnqueue); c != nil {
		rv := 0.0
		for _, n := range []string{"river (defaults)", "river (tuned)"} {
			if r := find(results, n, ScEnqueue); r != nil {
				rv = max(rv, r.Median)
			}
		}
		if rv > 0 {
			add("single enqueue ≥ 4× River", c.Median >= 4*rv, "%.2f× River (%s msgs/s)", c.Median/rv, num(rv))
		}
		if w := find(results, "watermill-sql", ScEnqueue); w != nil {
			add("single enqueue ≥ 1.5× watermill-sql", c.Median >= 1.5*w.Median, "%.2f× watermill-sql (%s msgs/s)", c.Median/w.Median, num(w.Median))
		}
		if p := find(results, "reference: pgbench -N", ScPgbench); p != nil {
			add("single enqueue against the server's commit rate (reported, no target)", true, "%s msgs/s = %.2f× pgbench -N (%s tps)",
				num(c.Median), c.Median/p.Median, num(p.Median))
		}
	}
	if c, b := find(results, db, ScBatch), find(results, base, ScBatch); c != nil && b != nil {
		add("batch enqueue ≥ 0.9× baseline", c.Median >= 0.9*b.Median, "%s msgs/s = %.2f× baseline (%s)", num(c.Median), c.Median/b.Median, num(b.Median))
	}
	if c := find(results, db, ScLatency); c != nil {
		add("latency p50 ≤ 2 ms at the given rate", c.P50 <= 2, "p50 %.2f ms", c.P50)
		add("latency p99 ≤ 5 ms at the given rate", c.P99 <= 5, "p99 %.2f ms", c.P99)
	}
	if c := find(results, db, ScBacklog); c != nil && c.Backlog != nil {
		st := c.Backlog
		drained := fmt.Sprintf("drained all %s", num(float64(st.Backlog)))
		if st.Capped {
			drained = fmt.Sprintf("drained only %s of %s within -backlog-max-run", num(float64(st.Messages)), num(float64(st.Backlog)))
		}
		add("backlog drains with flat memory (peak RSS ≤ 1.5× that of a backlog of N)",
			!st.Capped && st.SmallPeakMB > 0 && st.PeakRSSMB <= 1.5*st.SmallPeakMB,
			"%s: %s at %s msgs/s; peak RSS %.1f MiB vs %.1f MiB for a backlog of %s",
			c.System, drained, num(st.DrainRate), st.PeakRSSMB, st.SmallPeakMB, num(float64(st.SmallN)))
	}
	if w := find(results, "watermill-sql", ScFanOut); w != nil {
		if cs := conveyors(ScFanOut, byMedian); len(cs) > 0 {
			add(fmt.Sprintf("fan-out to %d subscriptions, one producer of batches: delivered ≥ 1.5× watermill-sql's", w.Subs), cs[0].v >= 1.5*w.Median,
				"watermill-sql (%d consumer groups) %s msgs/s; %s", w.Subs, num(w.Median), against(cs, w.Median))
		}
	}
	if none, main := find(results, db+" (no subscriptions)", ScFanOut), find(results, db, ScFanOut); none != nil && main != nil {
		// The defaults against the plain topic with the same consumers'
		// settings; the other configurations are shown beside.
		cs := conveyors(ScFanOut, func(r Result) float64 { return r.Publish })
		add(fmt.Sprintf("fan-out, one producer of batches: publish with %d subscriptions ≥ 0.7× with none (defaults)", fanOutSubs), main.Publish >= 0.7*none.Publish,
			"plain topic %s msgs/s; %s", num(none.Publish), against(cs, none.Publish))
		if wide := find(results, fmt.Sprintf("%s (%d subscriptions)", db, manyFanOutSubs), ScFanOut); wide != nil && wide.Err == "" {
			add(fmt.Sprintf("fan-out, one producer of batches: publish with %d subscriptions ≥ 0.5× with none (defaults)", manyFanOutSubs), wide.Publish >= 0.5*none.Publish,
				"%s msgs/s = %.2f× the plain topic (%s), %s delivered", num(wide.Publish), wide.Publish/none.Publish, num(none.Publish), num(wide.Median))
		}
	}
	if c, b := find(results, "conveyor channelpubsub", ScRoundtrip), find(results, "baseline: raw Go channel", ScRoundtrip); c != nil && b != nil {
		add("channelpubsub round trip ≥ 0.7× raw Go channel", c.Median >= 0.7*b.Median, "%s msgs/s = %.2f× raw channel (%s)", num(c.Median), c.Median/b.Median, num(b.Median))
	}
	ts = append(ts, otelTargets(results)...)
	if c, w := find(results, "conveyor event (dbpubsub)", ScEvents), find(results, "watermill cqrs (watermill-sql)", ScEvents); c != nil && w != nil {
		add("events on dbpubsub ≥ 1.5× Watermill cqrs on watermill-sql", c.Median >= 1.5*w.Median, "%s events/s = %.2f× Watermill cqrs (%s)",
			num(c.Median), c.Median/w.Median, num(w.Median))
	}
	if c, b := find(results, "conveyor event (channelpubsub)", ScEvents), find(results, "baseline: JSON over a Go channel", ScEvents); c != nil && b != nil {
		add("events on channelpubsub ≥ 0.7× JSON over a Go channel", c.Median >= 0.7*b.Median, "%s events/s = %.2f× the baseline (%s)",
			num(c.Median), c.Median/b.Median, num(b.Median))
	}
	ts = append(ts, natsTargets(results)...)
	ts = append(ts, kafkaTargets(results)...)
	return append(ts, sqliteTargets(results)...)
}

// sqliteTargets checks conveyor sqlitepubsub's goals (issue 34) against
// this run: on enqueue and drain at least 1.5× River on SQLite, on the
// drain at least the hand-written loop, p99 ≤ 5 ms at the rate of the
// latency scenario; a backlog drained with flat memory when it ran.
func sqliteTargets(results []Result) []Target {
	const cs, river, base = "conveyor sqlitepubsub", "river sqlite (tuned)", "baseline: SQLite loop"
	var ts []Target
	add := func(goal string, ok bool, format string, args ...any) {
		ts = append(ts, Target{Goal: goal, Met: ok, Actual: fmt.Sprintf(format, args...), Kind: KindSQLite})
	}
	// others lists the other configurations of sqlitepubsub on sc as
	// ratios to v.
	others := func(sc string, v float64) string {
		var parts []string
		for _, r := range results {
			if strings.HasPrefix(r.System, cs+" (") && r.Scenario == sc && r.Err == "" && len(r.Runs) > 0 {
				parts = append(parts, fmt.Sprintf("; %s %s msgs/s = %.2f×", r.System, num(r.Median), r.Median/v))
			}
		}
		return strings.Join(parts, "")
	}
	for _, sc := range []string{ScEnqueue, ScDrain} {
		c := find(results, cs, sc)
		if c == nil {
			continue
		}
		if r := find(results, river, sc); r != nil {
			add(fmt.Sprintf("SQLite %s ≥ 1.5× River on SQLite", sc), c.Median >= 1.5*r.Median,
				"%s msgs/s = %.2f× River (%s)%s", num(c.Median), c.Median/r.Median, num(r.Median), others(sc, r.Median))
		}
		if b := find(results, base, sc); b != nil && sc == ScDrain {
			add("SQLite drain ≥ 1× the hand-written loop", c.Median >= b.Median,
				"%s msgs/s = %.2f× the loop (%s)%s", num(c.Median), c.Median/b.Median, num(b.Median), others(sc, b.Median))
		}
	}
	if c := find(results, cs, ScLatency); c != nil {
		add("SQLite latency p99 ≤ 5 ms at the given rate", c.P99 <= 5, "p99 %.2f ms (p50 %.2f ms)", c.P99, c.P50)
	}
	if c := find(results, cs, ScBacklog); c != nil && c.Backlog != nil {
		st := c.Backlog
		add("SQLite backlog drains with flat memory (peak RSS ≤ 1.5× that of a backlog of N)",
			!st.Capped && st.SmallPeakMB > 0 && st.PeakRSSMB <= 1.5*st.SmallPeakMB,
			"%s of %s at %s msgs/s; peak RSS %.1f MiB vs %.1f MiB for a backlog of %s",
			num(float64(st.Messages)), num(float64(st.Backlog)), num(st.DrainRate), st.PeakRSSMB, st.SmallPeakMB, num(float64(st.SmallN)))
	}
	return ts
}

// kafkaTargets checks conveyor kafkapubsub's goals (issue 33) against
// this run: on enqueue, drain and fan-out delivered, at least 0.8× the
// hand-written franz-go baseline and 2× watermill-kafka; p99 ≤ 5 ms at
// the rate of the latency scenario.
func kafkaTargets(results []Result) []Target {
	const base, peer = "baseline: kafka franz-go", "watermill-kafka"
	var ts []Target
	add := func(goal string, ok bool, format string, args ...any) {
		ts = append(ts, Target{Goal: goal, Met: ok, Actual: fmt.Sprintf(format, args...), Kind: KindKafka})
	}
	for _, r := range results {
		if r.Kind != KindKafka || !strings.HasPrefix(r.System, "conveyor kafkapubsub") || r.Err != "" || len(r.Runs) == 0 {
			continue
		}
		switch r.Scenario {
		case ScEnqueue, ScDrain, ScFanOut:
			what := r.Scenario
			if r.Scenario == ScFanOut {
				what = "fan-out delivered"
			}
			if b := find(results, base, r.Scenario); b != nil && b.Err == "" && b.Median > 0 {
				add(fmt.Sprintf("Kafka %s, %s ≥ 0.8× the franz-go baseline", r.System, what), r.Median >= 0.8*b.Median,
					"%s msgs/s = %.2f× baseline (%s)", num(r.Median), r.Median/b.Median, num(b.Median))
			}
			if w := find(results, peer, r.Scenario); w != nil && w.Err == "" && w.Median > 0 {
				add(fmt.Sprintf("Kafka %s, %s ≥ 2× watermill-kafka", r.System, what), r.Median >= 2*w.Median,
					"%s msgs/s = %.2f× watermill-kafka (%s)", num(r.Median), r.Median/w.Median, num(w.Median))
			}
		case ScLatency:
			add(fmt.Sprintf("Kafka %s, latency p99 ≤ 5 ms at the given rate", r.System), r.P99 <= 5,
				"p99 %.2f ms (p50 %.2f ms)", r.P99, r.P50)
		}
	}
	return ts
}

// otelTargets checks the overhead of otelconveyor (issue 18): each OTel
// system against the same system unwrapped, on the scenario it runs.
func otelTargets(results []Result) []Target {
	var ts []Target
	for _, c := range []struct {
		goal, system, sc string
		min              float64
	}{
		{"OTel overhead: channelpubsub round trip instrumented ≥ 0.7× uninstrumented", "conveyor channelpubsub", ScRoundtrip, 0.7},
		{"OTel overhead: dbpubsub drain instrumented ≥ 0.9× uninstrumented", "conveyor dbpubsub", ScDrain, 0.9},
	} {
		// The goal as the issue sets it, every message sampled; then the
		// same ratio at 1% sampling, a production setting, on a line of
		// its own.
		for _, m := range []struct {
			mode       otelMode
			goal, says string
		}{
			{otelAll, c.goal, "every message sampled"},
			{otelSampled, c.goal + ", at 1% sampling", "1% of the traces sampled"},
		} {
			plain, wrapped := find(results, c.system, c.sc), find(results, c.system+m.mode.suffix(), c.sc)
			if plain == nil || wrapped == nil {
				continue
			}
			ts = append(ts, Target{Goal: m.goal, Met: wrapped.Median >= c.min*plain.Median,
				Actual: fmt.Sprintf("%s msgs/s = %.2f× uninstrumented (%s), %s",
					num(wrapped.Median), wrapped.Median/plain.Median, num(plain.Median), m.says)})
		}
	}
	// What a user pays (issue 35): the CPU a message costs more when
	// instrumented, send and process, at 1% sampling, on the in-memory
	// round trip, where every goroutine runs in this process.
	plain, wrapped := find(results, "conveyor channelpubsub", ScRoundtrip), find(results, "conveyor channelpubsub"+otelSampled.suffix(), ScRoundtrip)
	if plain != nil && wrapped != nil && plain.CPU > 0 && wrapped.CPU > 0 {
		cost := wrapped.CPU - plain.CPU
		ts = append(ts, Target{Goal: "OTel cost at 1% sampling: ≤ 1 µs of CPU a message, send and process (channelpubsub round trip)",
			Met: cost <= 1, Actual: fmt.Sprintf("%.2f µs a message: %.2f µs instrumented, %.2f µs uninstrumented (CPU of the bench process over messages, medians)",
				cost, wrapped.CPU, plain.CPU)})
	}
	return ts
}

// natsTargets checks conveyor natspubsub's goals against this run: on
// enqueue and drain, at least 0.8× the hand-written nats.go baseline and
// 1.5× the fastest watermill-nats configuration; on batch enqueue and
// fan-out delivered, 0.8× the baseline (issue 35); p99 ≤ 5 ms at the rate
// of the latency scenario.
func natsTargets(results []Result) []Target {
	const cn, base = "conveyor natspubsub", "baseline: nats.go JetStream"
	var ts []Target
	add := func(goal string, ok bool, format string, args ...any) {
		ts = append(ts, Target{Goal: goal, Met: ok, Actual: fmt.Sprintf(format, args...), Kind: KindNATS})
	}
	for _, sc := range []string{ScEnqueue, ScDrain} {
		c := find(results, cn, sc)
		if c == nil {
			continue
		}
		if b := find(results, base, sc); b != nil {
			add(fmt.Sprintf("NATS %s ≥ 0.8× the nats.go baseline", sc), c.Median >= 0.8*b.Median,
				"%s msgs/s = %.2f× baseline (%s)", num(c.Median), c.Median/b.Median, num(b.Median))
		}
		var peers []string
		best := 0.0
		for _, r := range results {
			if strings.HasPrefix(r.System, "watermill-nats") && r.Scenario == sc && r.Err == "" && len(r.Runs) > 0 {
				peers = append(peers, fmt.Sprintf("%s %s msgs/s = %.2f×", r.System, num(r.Median), c.Median/r.Median))
				best = max(best, r.Median)
			}
		}
		if best > 0 {
			add(fmt.Sprintf("NATS %s ≥ 1.5× watermill-nats (its fastest configuration)", sc), c.Median >= 1.5*best,
				"%s msgs/s; %s", num(c.Median), strings.Join(peers, "; "))
		}
	}
	for _, sc := range []string{ScBatch, ScFanOut} {
		c, b := find(results, cn, sc), find(results, base, sc)
		if c == nil || b == nil || b.Median <= 0 {
			continue
		}
		what := "batch enqueue"
		if sc == ScFanOut {
			what = "fan-out delivered"
		}
		add(fmt.Sprintf("NATS %s ≥ 0.8× the nats.go baseline", what), c.Median >= 0.8*b.Median,
			"%s msgs/s = %.2f× baseline (%s)", num(c.Median), c.Median/b.Median, num(b.Median))
	}
	if c := find(results, cn, ScLatency); c != nil {
		add("NATS latency p99 ≤ 5 ms at the given rate", c.P99 <= 5, "p99 %.2f ms (p50 %.2f ms)", c.P99, c.P50)
	}
	return ts
}

// num formats a rate with thousands separators.
func num(v float64) string {
	if v >= 100 || v == 0 {
		s := fmt.Sprintf("%.0f", v)
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return fmt.Sprintf("%.1f", v)
}

// lacksAbility reports whether err is a system's lack of what a scenario
// needs (a batch API, subscriptions): a cell, not an error.
func lacksAbility(err string) bool {
	return err == errNoBatch.Error() || err == errNoSubscriptions.Error()
}

// cell renders one result as a table cell.
func cell(r *Result) string {
	if r == nil {
		return "–"
	}
	if r.Err != "" {
		if lacksAbility(r.Err) {
			return r.Err
		}
		return "error"
	}
	var s string
	switch r.Scenario {
	case ScLatency:
		s = fmt.Sprintf("%.2f / %.2f / %.2f", r.P50, r.P90, r.P99)
		if r.Lost > 0 {
			s += fmt.Sprintf(" (%d not handled within 3 s)", r.Lost)
		}
	case ScPgbench:
		s = num(r.Median) + " tps"
	case ScFanOut:
		s = num(r.Publish) + " / " + num(r.Median)
	case ScBacklog:
		s = num(r.Median)
		if st := r.Backlog; st != nil {
			s += fmt.Sprintf(", peak %.0f MiB (N: %.0f MiB)", st.PeakRSSMB, st.SmallPeakMB)
		}
	default:
		s = num(r.Median)
	}
	if r.Capped {
		s += "*"
	}
	if r.Ratio > 0 && r.Scenario != ScBacklog {
		s += fmt.Sprintf(" (%.2f×)", r.Ratio)
	}
	return s
}

var columnTitle = map[string]string{
	ScEnqueue:   "1. enqueue msgs/s",
	ScBatch:     "2. batch enqueue msgs/s",
	ScDrain:     "3. drain msgs/s",
	ScLatency:   "4. latency p50/p90/p99 ms",
	ScRoundtrip: "5. round trip msgs/s",
	ScPgbench:   "pgbench -N",
	ScBacklog:   "6. backlog msgs/s",
	ScEvents:    "7. events/s",
	ScFanOut:    fmt.Sprintf("8. fan-out to %d: publish / delivered msgs/s", fanOutSubs),
}

// columns are the scenarios that have at least one result.
func (rep *Report) columns() []string {
	var cols []string
	for _, sc := range scenarioOrder {
		for _, r := range rep.Results {
			if r.Scenario == sc {
				cols = append(cols, sc)
				break
			}
		}
	}
	return cols
}

func (rep *Report) rows() []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range rep.Systems {
		for _, r := range rep.Results {
			if r.System == s.Name && !seen[s.Name] {
				seen[s.Name] = true
				names = append(names, s.Name)
			}
		}
	}
	return names
}

func (rep *Report) grid() ([]string, [][]string) {
	cols := rep.columns()
	head := append([]string{"system"}, nil...)
	for _, c := range cols {
		head = append(head, columnTitle[c])
	}
	var rows [][]string
	for _, name := range rep.rows() {
		row := []string{name}
		for _, c := range cols {
			var r *Result
			for i := range rep.Results {
				if rep.Results[i].System == name && rep.Results[i].Scenario == c {
					r = &rep.Results[i]
				}
			}
			row = append(row, cell(r))
		}
		rows = append(rows, row)
	}
	return head, rows
}

const legend = "Medians of the repetitions; (×) is the ratio to the baseline of the same kind in this run " +
	"(for latency: baseline p50 / system p50, above 1 is faster); * a run hit the time cap (-max-run) " +
	"and reports what it did in that time; – not applicable."

// writeTable prints the plain-text table.
func (rep *Report) writeTable(w io.Writer) {
	head, rows := rep.grid()
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = len([]rune(h))
	}
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			fmt.Fprintf(w, "%-*s", width[i]+2, c)
		}
		fmt.Fprintln(w)
	}
	line(head)
	for _, row := range rows {
		line(row)
	}
	fmt.Fprintln(w, legend)
	for _, r := range rep.Results {
		if r.Err != "" && !lacksAbility(r.Err) {
			fmt.Fprintf(w, "error: %s, %s: %s\n", r.System, r.Scenario, r.Err)
		}
	}
	fmt.Fprintln(w, "\nconfigurations:")
	for _, si := range rep.Systems {
		fmt.Fprintf(w, "  %s: %s\n", si.Name, si.Config)
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w, "\nconveyor's targets:")
		for _, t := range rep.Targets {
			mark := "MISSED"
			if t.Met {
				mark = "met"
			}
			fmt.Fprintf(w, "  %-6s %s: %s\n", mark, t.Goal, t.Actual)
		}
	}
}

// writeJSON saves the report in dir as <time>.json and latest.json.
func (rep *Report) writeJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, rep.Started.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "latest.json"), b, 0o644)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// section is a part of BENCHMARKS.md: the systems of some kinds, as one
// run measured them.
type section struct {
	title string
	kinds []Kind
	rep   *Report // nil: no run has measured them
	path  string  // rep's results JSON
}

// mdSections are the sections of BENCHMARKS.md, in order.
func mdSections() []section {
	return []section{
		{title: "PostgreSQL and in memory", kinds: []Kind{KindPostgres, KindMemory}},
		{title: "NATS JetStream", kinds: []Kind{KindNATS}},
		{title: "Kafka", kinds: []Kind{KindKafka}},
		{title: "SQLite (embedded)", kinds: []Kind{KindSQLite}},
	}
}

// measured reports whether rep has results of a system of one of kinds.
func (rep *Report) measured(kinds []Kind) bool {
	for _, r := range rep.Results {
		if slices.Contains(kinds, r.Kind) {
			return true
		}
	}
	return false
}

// only returns a copy of rep with the systems, results and targets of
// kinds alone.
func (rep *Report) only(kinds []Kind) *Report {
	out := *rep
	out.Systems, out.Results, out.Targets = nil, nil, nil
	for _, s := range rep.Systems {
		if slices.Contains(kinds, s.Kind) {
			out.Systems = append(out.Systems, s)
		}
	}
	for _, r := range rep.Results {
		if slices.Contains(kinds, r.Kind) {
			out.Results = append(out.Results, r)
		}
	}
	for _, t := range rep.Targets {
		if slices.Contains(kinds, t.kind()) {
			out.Targets = append(out.Targets, t)
		}
	}
	return &out
}

// sectionsFor fills the sections of BENCHMARKS.md: each from rep (saved
// at path) when rep measured its systems, else from the newest results
// JSON beside path that did.
func sectionsFor(rep *Report, path string) ([]section, error) {
	secs := mdSections()
	var older []string // the results JSONs beside path, newest first
	if entries, err := os.ReadDir(filepath.Dir(path)); err == nil {
		for _, e := range entries {
			n := e.Name()
			if strings.HasSuffix(n, ".json") && n != "latest.json" && n != filepath.Base(path) {
				older = append(older, filepath.Join(filepath.Dir(path), n))
			}
		}
		slices.Sort(older)
		slices.Reverse(older)
	}
	for i := range secs {
		s := &secs[i]
		if rep.measured(s.kinds) {
			s.rep, s.path = rep.only(s.kinds), path
			continue
		}
		for _, p := range older {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			var o Report
			if err := json.Unmarshal(b, &o); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if o.measured(s.kinds) {
				s.rep, s.path = o.only(s.kinds), p
				break
			}
		}
	}
	return secs, nil
}

// writeMarkdown renders BENCHMARKS.md from secs.
func writeMarkdown(w io.Writer, secs []section) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# Benchmarks\n\n")
	p("Written by the benchmark harness (`bench/`) from real runs; nothing here is typed in by hand. Each section " +
		"comes from one run, named with its command, date and raw numbers. `make bench` runs every system and rewrites " +
		"every section; a run of some systems only (`make bench-nats`, or `-systems`) rewrites the sections of the " +
		"systems it ran and keeps each other section from the newest results in `bench/results/` that have it.\n")
	for _, s := range secs {
		p("\n## %s\n\n", s.title)
		if s.rep == nil {
			p("No run in `bench/results/` has measured these systems yet.\n")
			continue
		}
		s.rep.writeSection(w, s)
	}
	p("\n## Scenarios\n\n%s", scenarioNotes)
	p("\n## Reproduce\n\n```\nmake bench                       # every system; rewrites this file\n" +
		"make bench-nats                  # the NATS systems only; rewrites their section\n" +
		"make bench-kafka                 # the Kafka systems only (kfake unless KAFKA_BROKERS is set); rewrites their section\n" +
		"make bench BENCH_FLAGS='-systems sqlite,SQLite'   # the SQLite systems only (~2.5 min); rewrites their section\n" +
		"cd bench && go run . -systems 'conveyor sqlitepubsub' -scenarios backlog -sqlite-backlog 1000000 -backlog-max-run 15m   # the opt-in SQLite backlog\n" +
		"cd bench && ../scripts/with-postgres.sh ../scripts/with-nats.sh go run . -h   # the flags (N, W, repetitions, systems, scenarios...)\n" +
		"cd bench && ../scripts/with-postgres.sh ../scripts/with-nats.sh go test -count=1 ./...   # the smoke runs of `make test`\n```\n")
}

// durability says whether the server's settings make a commit durable:
// fsync, synchronous_commit and full_page_writes on, as the server's
// defaults are.
func durability(pg map[string]string) string {
	on := func(k string) bool { return pg[k] == "on" }
	settings := fmt.Sprintf("fsync %s, synchronous_commit %s, full_page_writes %s", pg["fsync"], pg["synchronous_commit"], pg["full_page_writes"])
	if on("fsync") && on("synchronous_commit") && on("full_page_writes") {
		return "**durable**, the server's defaults (" + settings + ")"
	}
	return "**not durable** (" + settings + "): commits cost less than on a production server"
}

// writeSection renders the section s of BENCHMARKS.md from rep, which
// holds its systems only.
func (rep *Report) writeSection(w io.Writer, s section) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	path := filepath.ToSlash(strings.TrimPrefix(s.path, "./"))
	cmd := "started by `" + rep.Command + "`"
	if rep.Command == "" {
		cmd = "whose command its results do not record (written before the harness kept it; the commit that added " +
			"`bench/" + path + "` names it)"
	}
	p("From the run of %s (took %s), %s. The raw numbers of every repetition are in `bench/%s`.\n\n",
		rep.Started.UTC().Format("2006-01-02 15:04 MST"), rep.Took, cmd, path)
	c := rep.Config
	reps := fmt.Sprintf("%d repetitions", c.Reps)
	if c.MinTime > 0 {
		reps = fmt.Sprintf("at least %d repetitions, and more (up to %d) of a system whose timed runs add up to less than %v", c.Reps, c.MaxReps, c.MinTime)
	}
	if slices.Contains(s.kinds, KindNATS) || slices.Contains(s.kinds, KindKafka) {
		p("N = %d messages, W = %d workers, %s (median reported), batch %d, latency at %d msgs/s for %v, run cap %v.\n\n",
			c.N, c.W, reps, c.BatchSize, c.Rate, c.LatencyFor, c.MaxRun)
	} else if slices.Contains(s.kinds, KindSQLite) {
		backlog := "backlog not run (opt-in: -sqlite-backlog)"
		if c.SQLiteBacklog > 0 {
			backlog = fmt.Sprintf("backlog %d messages (drain cap %v)", c.SQLiteBacklog, c.BacklogMax)
		}
		p("N = %d messages (-sqlite-n), W = %d workers, %s (median reported), batch %d, latency at %d msgs/s for %v, %s, run cap %v. "+
			"Every system on a SQLite file of its own per run (a temporary directory, removed after), WAL, "+
			"**synchronous=FULL** (sqlitepubsub's default: a commit survives a power loss).\n\n",
			c.SQLiteN, c.W, reps, c.BatchSize, c.Rate, c.SQLiteLatencyFor, backlog, c.MaxRun)
	} else {
		events := ""
		if c.EventsN > 0 { // results of runs before the events scenario lack it
			events = fmt.Sprintf("; in-memory events: %d", c.EventsN)
		}
		p("N = %d messages (round trip: %d%s), W = %d workers, %s (median reported), batch %d, latency at %d msgs/s for %v, "+
			"backlog %d messages (%d repetition, drain cap %v), run cap %v, %d database connections per system.\n\n",
			c.N, c.RoundtripN, events, c.W, reps, c.BatchSize, c.Rate, c.LatencyFor, c.Backlog, c.BacklogReps, c.BacklogMax, c.MaxRun, c.PoolSize)
		if len(rep.Postgres) > 0 {
			p("PostgreSQL durability: %s.\n\n", durability(rep.Postgres))
		}
	}
	head, rows := rep.grid()
	p("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, row := range rows {
		for i := range row {
			row[i] = mdEscape(row[i])
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\n%s\n", legend)
	for _, r := range rep.Results {
		if r.Err != "" && !lacksAbility(r.Err) {
			p("\nError: %s, %s: %s\n", r.System, r.Scenario, mdEscape(r.Err))
		}
	}
	if len(rep.Targets) > 0 {
		title := "conveyor's targets (issues 6, 16, 18 and 20)"
		if slices.Contains(s.kinds, KindNATS) {
			title = "conveyor's targets on NATS"
		}
		if slices.Contains(s.kinds, KindKafka) {
			title = "conveyor's targets on Kafka (issue 33)"
		}
		if slices.Contains(s.kinds, KindSQLite) {
			title = "conveyor's targets on SQLite (issue 34)"
		}
		p("\n### %s\n\n| goal | this run | | where the time goes, when missed |\n| --- | --- | --- | --- |\n", title)
		for _, t := range rep.Targets {
			mark, reason := "**missed**", why(t.Goal)
			if t.Met {
				mark, reason = "met", ""
			}
			p("| %s | %s | %s | %s |\n", mdEscape(t.Goal), mdEscape(t.Actual), mark, mdEscape(reason))
		}
		p("\nThe last column is written by hand from the design records (bench/missed.go), shown for the lines this run missed.\n")
	}
	for _, r := range rep.Results {
		if r.Scenario == ScBacklog && r.Backlog != nil {
			st := r.Backlog
			capped := ""
			if st.Capped {
				capped = fmt.Sprintf(" It drained only %s of them within -backlog-max-run (%v).", num(float64(st.Messages)), rep.Config.BacklogMax)
			}
			p("\n### Backlog (scenario 6)\n\n%s: %s messages put with the batch API (1,000 a call) at %s msgs/s, then "+
				"drained by a separate consumer process (W workers) at %s msgs/s.%s Its peak RSS (VmHWM, read by the process "+
				"itself) was %.1f MiB; with a backlog of %s it was %.1f MiB. RSS after each tenth of the backlog (MiB): %s.\n",
				r.System, num(float64(st.Backlog)), num(st.FillRate), num(st.DrainRate), capped, st.PeakRSSMB,
				num(float64(st.SmallN)), st.SmallPeakMB, floats(st.RSSByTenthMB))
		}
	}
	p("\n### Configurations\n\n| system | configuration |\n| --- | --- |\n")
	for _, si := range rep.Systems {
		p("| %s | %s |\n", mdEscape(si.Name), mdEscape(si.Config))
	}
	p("\n### Machine\n\n")
	for _, k := range sortedKeys(rep.Machine) {
		p("- %s: %s\n", k, rep.Machine[k])
	}
	if slices.Contains(s.kinds, KindPostgres) && len(rep.Postgres) > 0 {
		p("\n### PostgreSQL server\n\n")
		for _, k := range sortedKeys(rep.Postgres) {
			p("- %s: %s\n", k, rep.Postgres[k])
		}
		p("\nThe server is the one `scripts/with-postgres.sh` gives: `$DATABASE_URL`, else a server on " +
			"127.0.0.1:5432, else a throwaway cluster; `make bench` always starts a throwaway one at the server's durability " +
			"defaults (PG_DURABLE=1: fsync, synchronous_commit and full_page_writes on) unless DATABASE_URL is set. Each " +
			"system works in a schema of its own (pgbench in a database of its own), created and dropped by the harness.\n")
	}
	if slices.Contains(s.kinds, KindNATS) && len(rep.NATS) > 0 {
		p("\n### NATS server\n\n")
		for _, k := range sortedKeys(rep.NATS) {
			p("- %s: %s\n", k, rep.NATS[k])
		}
		p("\nWhat a client sees of the server (its INFO and JetStream account). The server is the one " +
			"`scripts/with-nats.sh` gives: `$NATS_URL`, else a server on 127.0.0.1:4222, else a throwaway " +
			"nats-server (-js, its store in a temporary directory); its store directory and file-store sync settings " +
			"are the server's own and not visible to a client. Each system instance makes its streams under a fresh " +
			"prefix (bench_<run>_<system>_<random>) and deletes them when it closes.\n")
	}
	if slices.Contains(s.kinds, KindKafka) && len(rep.Kafka) > 0 {
		p("\n### Kafka cluster\n\n")
		for _, k := range sortedKeys(rep.Kafka) {
			p("- %s: %s\n", k, rep.Kafka[k])
		}
		p("\nkfake is not a real broker: it keeps the log in memory and writes nothing to disk, so a produce costs " +
			"the cluster far less than on Kafka, and these rows compare what the clients cost (round trips, batching, " +
			"commits), not what a production cluster would sustain. Every system works on topics and groups under a " +
			"fresh prefix, deleted when it closes.\n")
	}
}

func floats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// machine describes this computer.
func machine() map[string]string {
	m := map[string]string{
		"cpus (runtime.NumCPU)": fmt.Sprint(runtime.NumCPU()),
		"go":                    runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m["memory"] = strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output(); err == nil {
		rev := strings.TrimSpace(string(out))
		dirty, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--",
			"pubsub", "channelpubsub", "dbpubsub", "natspubsub", "sqlitepubsub", "migrations", "internal", "event", "di", "otelconveyor").Output()
		if err == nil && len(bytes.TrimSpace(dirty)) > 0 {
			rev += " + uncommitted changes in the framework's packages"
		}
		m["conveyor revision"] = rev
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m["load average at start (1/5/15 min)"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

// scenarioNotes says what each column measures, for BENCHMARKS.md.
const scenarioNotes = `1. **enqueue**: N messages, one call each, from W goroutines; messages per second. Each goroutine first
   makes one untimed call, so that connections and prepared statements are set up before the clock runs.
2. **batch enqueue**: N messages in calls of the batch size, from W goroutines, where the system has a batch API;
   each goroutine first makes one untimed call of the batch size, as in 1.
3. **drain**: N messages already enqueued (untimed), then consumed and acknowledged by W workers; the clock runs
   from starting the consumers until the last message is settled (for River: reported completed by its
   subscription, as its own benchmark counts).
4. **latency**: consumers running, one producer enqueues at the given rate; the time from just before the enqueue
   call to the handler, p50 / p90 / p99. Producer and consumers share one process (and, for conveyor, one PubSub).
5. **round trip** (in memory): W producers and W consumers at once, -roundtrip-n messages (5 × N by default:
   N in-memory messages take 10–30 ms, below the noise of a shared machine).
6. **backlog**: the backlog is put with the batch API, then a separate process (this binary, re-executed) drains it
   with W workers and reports its own peak RSS; the same with a backlog of N shows whether memory grows with it.
7. **events**: the event layer. W goroutines dispatch typed events (a struct of two int64s, a string and an int) while
   a service of W handler workers consumes them (conveyor: event.Service with one listener; Watermill: cqrs
   EventBus and EventGroupProcessor, whose router has no worker count); events per second from the first dispatch
   until the last handler returns. -events-n events in memory, where the ratio is to a hand-written limit (json.Marshal,
   a buffered Go channel, json.Unmarshal); N on PostgreSQL, where there is no such baseline: compare the two rows.
8. **fan-out**: a topic with 4 subscriptions (conveyor: pubsub.Subscribe; watermill-sql: consumer groups), made
   before the first publish, each consumed by W/4 workers (watermill-sql: one subscription per group, as in 3), all
   started 500 ms before it; one producer publishes N messages (in memory: -roundtrip-n) in calls of the batch size
   (conveyor: pubsub.EnqueueBatch; watermill-sql: Publish(msgs...), one multi-row INSERT). Batches, as both systems
   offer them: one producer of single calls would bound delivery by its own round trips and measure the producer,
   not the fan-out. **publish**: N over the time until the last call returns, with the consumers running;
   **delivered**: 4 × N over the time from the first publish until every subscription has acked its N copies.
   conveyor dbpubsub (no subscriptions) is the same producer on a plain topic read by W workers (its default
   subscription, one copy of each message): the publish rate conveyor's defaults are compared with.

The **(OTel)** rows are conveyor's with the PubSub wrapped by otelconveyor on the OpenTelemetry SDK, every
message sampled, spans and metrics made and then dropped (see their configurations); the **(OTel 1%)** rows the
same with 1% of the traces sampled (ParentBased(TraceIDRatioBased(0.01)), a production setting). Each runs only
the scenario its overhead target compares with the same system unwrapped in the same run.

Each system gets a fresh schema per repetition; repetitions are interleaved across systems, so a noisy moment of
the machine does not fall on one system only. **pgbench -N** is the physical reference: the commit rate this server
gives one-transaction-per-message designs.

**On SQLite** (its own section), scenarios 1–4 on a SQLite file per system and repetition, in a temporary directory
removed after, WAL and synchronous=FULL (sqlitepubsub's default: a commit survives a power loss), with -sqlite-n
messages and a latency run of -sqlite-latency-for (fewer than on PostgreSQL: one writer per file and an fsync per
commit). The peer is River on SQLite (riversqlite), configured as its own ` + "`river bench`" + `; the baseline a
hand-written loop on the same driver (modernc.org/sqlite) and one connection: INSERT; claim with UPDATE … RETURNING;
DELETE, each its own transaction. **conveyor sqlitepubsub (128 consumers)** is the drain with 128 consumer
goroutines, River's tuned configuration having 2,000 workers. The backlog (scenario 6) is opt-in (-sqlite-backlog).

**On NATS** (its own section), scenarios 1–4 and 8 as above, on one NATS server with JetStream; each instance makes
its streams under a fresh prefix and deletes them when it closes. The baseline is what a user would write with
nats.go's jetstream package alone: PublishAsync and waiting for the PubAck (a batch: all its PublishAsyncs, then
all their PubAcks), a durable pull consumer read by W goroutines with Fetch(100) and an Ack of each message.
natspubsub's batch enqueue (column 2, and its fan-out's publish) is pipelined as the baseline's: every item
published asynchronously, then all their PubAcks awaited; not all or none (JetStream 2.9 has no atomic batch).
watermill-nats' Publish(msgs...) publishes one message after another. Fan-out: conveyor with pubsub.Subscribe (durable pull consumers of a stream
with interest retention); watermill-nats with a Subscriber per subscription (its defaults: an ephemeral push
consumer each; watermill-benchmark's configuration: a queue group each); the baseline with a durable pull consumer
each.
`
