// Command bench measures conveyor's backends against their peers, side by
// side in one run, and writes the table to stdout, the raw numbers to
// results/ and, with -md, BENCHMARKS.md. Run it through make bench, or:
//
//	cd bench && ../scripts/with-postgres.sh go run . -h
//
// The systems are the sys_*.go files, one per system, each behind the
// System interface of harness.go. The scenarios are in scenarios.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

// stderr receives progress lines and the systems' error logs.
var stderr io.Writer = os.Stderr

func defaultConfig() Config {
	return Config{
		N:           20_000,
		RoundtripN:  100_000,
		EventsN:     50_000,
		W:           8,
		Reps:        3,
		MinTime:     time.Second,
		MaxReps:     15,
		BatchSize:   100,
		Rate:        500,
		LatencyFor:  10 * time.Second,
		MaxRun:      10 * time.Second,
		Backlog:     1_000_000,
		BacklogMax:  90 * time.Second,
		BacklogReps: 1,
		PoolSize:    conveyorPool(),

		SQLiteN:          5_000,
		SQLiteLatencyFor: 5 * time.Second,
	}
}

func main() {
	if isBacklogChild() {
		os.Exit(backlogChild())
	}
	cfg := defaultConfig()
	flag.IntVar(&cfg.N, "n", cfg.N, "messages per run of the enqueue, batch, drain and fan-out scenarios")
	flag.IntVar(&cfg.RoundtripN, "roundtrip-n", cfg.RoundtripN, "messages per run of the in-memory round trip and fan-out "+
		"(more than -n: 20,000 in-memory messages take ~10-30 ms, below the noise of a shared machine)")
	flag.IntVar(&cfg.EventsN, "events-n", cfg.EventsN, "events per run of the in-memory event systems "+
		"(more than -n: 20,000 take ~50 ms on the JSON baseline; the PostgreSQL ones dispatch -n)")
	flag.IntVar(&cfg.W, "w", cfg.W, "workers: producers and consumers")
	flag.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions of each scenario (the median is reported)")
	flag.DurationVar(&cfg.MinTime, "min-time", cfg.MinTime, "repeat a system's scenario past -reps until its timed runs add up to this "+
		"(0: exactly -reps); short runs are noisy on a shared machine")
	flag.IntVar(&cfg.MaxReps, "max-reps", cfg.MaxReps, "the most repetitions -min-time may ask for")
	flag.IntVar(&cfg.BatchSize, "batch", cfg.BatchSize, "messages per call of the batch scenario")
	flag.IntVar(&cfg.Rate, "rate", cfg.Rate, "latency scenario: messages per second")
	flag.DurationVar(&cfg.LatencyFor, "latency-for", cfg.LatencyFor, "latency scenario: how long the producer runs")
	flag.DurationVar(&cfg.MaxRun, "max-run", cfg.MaxRun, "cap on one timed run; a slower system reports the rate it reached")
	flag.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "backlog scenario: messages waiting for the consumer process (0 skips it)")
	flag.DurationVar(&cfg.BacklogMax, "backlog-max-run", cfg.BacklogMax, "backlog scenario: cap on the consumer process's drain")
	flag.IntVar(&cfg.BacklogReps, "backlog-reps", cfg.BacklogReps, "backlog scenario: repetitions")
	flag.IntVar(&cfg.SQLiteN, "sqlite-n", cfg.SQLiteN, "SQLite systems: messages per run of the enqueue, batch and drain scenarios "+
		"(fewer than -n: one writer per file, an fsync per commit at synchronous=FULL)")
	flag.DurationVar(&cfg.SQLiteLatencyFor, "sqlite-latency-for", cfg.SQLiteLatencyFor, "SQLite systems: how long the latency scenario's producer runs")
	flag.IntVar(&cfg.SQLiteBacklog, "sqlite-backlog", cfg.SQLiteBacklog, "SQLite systems: backlog scenario's messages (0, the default, skips it: "+
		"a million takes minutes to fill and drain at synchronous=FULL)")
	flag.IntVar(&cfg.PoolSize, "pool", cfg.PoolSize, "database connections per system (conveyor's dbpubsub.Open uses max(8, 4×GOMAXPROCS))")
	flag.StringVar(&cfg.Systems, "systems", "", "comma-separated substrings of the systems to run (default all; \"nats\": the NATS systems)")
	flag.StringVar(&cfg.SkipSystems, "skip-systems", "", "comma-separated substrings of systems not to run")
	flag.StringVar(&cfg.Scenarios, "scenarios", "", "comma-separated scenarios to run (default all): "+strings.Join(scenarioOrder, ","))
	resultsDir := flag.String("results", "results", "directory for the JSON results")
	md := flag.String("md", "", "write BENCHMARKS.md to this path")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	list := flag.Bool("list", false, "list the systems and their configurations, and exit")
	from := flag.String("from", "", "measure nothing: render the table (and -md) from this results JSON of an earlier run")
	flag.Parse()

	if *list {
		for _, s := range orderedSystems() {
			fmt.Printf("%-28s %-8s %s\n", s.Name(), s.Kind(), s.Config(cfg))
		}
		return
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var rep *Report
	var path string
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			fatal(err)
		}
		rep = &Report{}
		if err := json.Unmarshal(b, rep); err != nil {
			fatal(fmt.Errorf("%s: %w", *from, err))
		}
		path = *from
		if filepath.Base(path) == "latest.json" {
			path = filepath.Join(filepath.Dir(path), rep.Started.UTC().Format("20060102T150405Z")+".json")
		}
		rep.writeTable(os.Stdout)
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var err error
		if rep, err = run(ctx, cfg); err != nil {
			pprof.StopCPUProfile()
			fatal(err)
		}
		rep.writeTable(os.Stdout)
		if path, err = rep.writeJSON(*resultsDir); err != nil {
			fatal(err)
		}
		fmt.Fprintf(stderr, "bench: results in %s\n", path)
	}
	if *md != "" {
		f, err := os.Create(*md)
		if err != nil {
			fatal(err)
		}
		secs, err := sectionsFor(rep, path)
		if err != nil {
			fatal(err)
		}
		writeMarkdown(f, secs)
		if err := f.Close(); err != nil {
			fatal(err)
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", *md)
	}
}

// commandEnv, when set, is how the run was started, as BENCHMARKS.md
// should show it (the Makefile sets it to its make command).
const commandEnv = "CONVEYOR_BENCH_COMMAND"

// command is how this run was started: $CONVEYOR_BENCH_COMMAND, else the
// go run command with this process's flags.
func command() string {
	if c := os.Getenv(commandEnv); c != "" {
		return c
	}
	args := []string{"cd bench && go run ."}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"$`\\|&;<>(){}*?[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// run runs every wanted scenario on every wanted system. The repetitions
// are interleaved (rep 1 of every system, then rep 2...) so that a noisy
// moment of a shared machine does not fall on one system only.
func run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Command: command(), Config: cfg, Machine: machine()}
	var systems []System
	var kinds []Kind
	for _, s := range orderedSystems() {
		if cfg.wantSystem(s.Name()) {
			systems = append(systems, s)
			kinds = append(kinds, s.Kind())
			rep.Systems = append(rep.Systems, SystemInfo{Name: s.Name(), Kind: s.Kind(), Config: s.Config(cfg)})
		}
	}
	env, err := newEnv(ctx, kinds...)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	if env.Admin != nil {
		if rep.Postgres, err = env.settings(ctx); err != nil {
			return nil, fmt.Errorf("read the PostgreSQL server's settings: %w", err)
		}
	}
	if env.NATS != nil {
		if rep.NATS, err = env.NATS.settings(ctx); err != nil {
			return nil, fmt.Errorf("read the NATS server's settings: %w", err)
		}
	}
	if env.Kafka != nil {
		rep.Kafka = env.Kafka.settings()
	}
	for _, sc := range scenarioOrder {
		if !cfg.wantScenario(sc) || (sc == ScBacklog && cfg.Backlog == 0 && cfg.SQLiteBacklog == 0) {
			continue
		}
		var results []*Result
		for _, s := range systems {
			if ok, _ := applicable(s, sc); ok && (sc != ScBacklog || cfg.forKind(s.Kind()).Backlog > 0) {
				results = append(results, &Result{System: s.Name(), Kind: s.Kind(), Scenario: sc,
					Unit: unitOf(sc), baseline: s.Baseline()})
			}
		}
		// Past reps, only the systems whose timed runs add up to less
		// than cfg.MinTime run again, up to cfg.MaxReps.
		reps, most := cfg.Reps, cfg.MaxReps // validate: MaxReps >= Reps when MinTime is set
		if sc == ScBacklog {
			reps = max(1, cfg.BacklogReps)
			most = reps
		}
		for i := 0; i < reps || (i < most && shortOfTime(results, cfg.MinTime)); i++ {
			for _, s := range systems {
				r := resultFor(results, s.Name())
				if r == nil || r.Err != "" || (i >= reps && r.timed() >= cfg.MinTime) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				run, err := runScenario(ctx, env, cfg, s, sc)
				if err != nil {
					r.Err = err.Error()
					if !errors.Is(err, errNoBatch) && !errors.Is(err, errNoSubscriptions) {
						fmt.Fprintf(stderr, "bench: %-9s %-34s rep %d/%d: error: %v\n", sc, s.Name(), i+1, max(reps, i+1), err)
					}
					continue
				}
				r.Runs = append(r.Runs, run)
				fmt.Fprintf(stderr, "bench: %-9s %-34s rep %d/%d: %s\n", sc, s.Name(), i+1, max(reps, i+1), describe(sc, run))
			}
		}
		for _, r := range results {
			r.summarize()
			rep.Results = append(rep.Results, *r)
		}
	}
	ratios(rep.Results)
	rep.Targets = targets(rep.Results)
	rep.Took = time.Since(rep.Started).Round(time.Second).String()
	if m := machine(); m != nil {
		rep.Machine["load average at end (1/5/15 min)"] = m["load average at start (1/5/15 min)"]
	}
	return rep, nil
}

// shortOfTime reports whether a system still measuring (no error) has
// timed runs adding up to less than min: its median would rest on too
// little time.
func shortOfTime(results []*Result, min time.Duration) bool {
	for _, r := range results {
		if r.Err == "" && r.timed() < min {
			return true
		}
	}
	return false
}

// timed is the time r's runs were timed, added up.
func (r *Result) timed() time.Duration {
	var total time.Duration
	for _, run := range r.Runs {
		total += run.Elapsed
	}
	return total
}

func resultFor(results []*Result, name string) *Result {
	for _, r := range results {
		if r.System == name {
			return r
		}
	}
	return nil
}

func describe(sc string, r Run) string {
	capped := ""
	if r.Capped {
		capped = " (capped)"
	}
	switch sc {
	case ScLatency:
		return fmt.Sprintf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms, %d msgs, %d lost", r.P50, r.P90, r.P99, r.Max, r.Count, r.Lost)
	case ScPgbench:
		return fmt.Sprintf("%s tps", num(r.Value))
	case ScBacklog:
		st := r.Backlog
		return fmt.Sprintf("%s of %s msgs drained at %s msgs/s%s (filled at %s msgs/s); peak RSS %.1f MiB (backlog of %s: %.1f MiB)",
			num(float64(st.Messages)), num(float64(st.Backlog)), num(st.DrainRate), capped, num(st.FillRate), st.PeakRSSMB, num(float64(st.SmallN)), st.SmallPeakMB)
	case ScEvents:
		return fmt.Sprintf("%s events/s (%d events in %v)%s", num(r.Value), r.Count, r.Elapsed.Round(time.Millisecond), capped)
	case ScFanOut:
		if r.Subs == 0 {
			return fmt.Sprintf("published %s msgs/s in batches from one producer, delivered %s msgs/s (%d deliveries of a plain topic in %v)%s",
				num(r.Publish), num(r.Value), r.Count, r.Elapsed.Round(time.Millisecond), capped)
		}
		return fmt.Sprintf("published %s msgs/s in batches from one producer, delivered %s msgs/s (%d deliveries to %d subscriptions in %v)%s",
			num(r.Publish), num(r.Value), r.Count, r.Subs, r.Elapsed.Round(time.Millisecond), capped)
	}
	return fmt.Sprintf("%s msgs/s (%d msgs in %v)%s", num(r.Value), r.Count, r.Elapsed.Round(time.Millisecond), capped)
}
