package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
)

// Backlogger is a system whose consumer can run in a separate process, so
// that its peak memory is its own (scenario 6).
type Backlogger interface {
	// FillBacklog makes a fresh instance holding n waiting messages and
	// returns the environment a child process needs to consume them.
	FillBacklog(ctx context.Context, env *Env, cfg Config, n int) (childEnv []string, cleanup func() error, err error)
}

// BacklogStats is what a backlog run reports.
type BacklogStats struct {
	Messages     int64     `json:"messages"`         // drained
	Backlog      int64     `json:"backlog"`          // waiting at the start
	Capped       bool      `json:"capped,omitempty"` // the drain hit -backlog-max-run
	FillRate     float64   `json:"fill_msgs_per_s"`  // batch enqueue of the backlog, parent process
	DrainRate    float64   `json:"drain_msgs_per_s"` // child process
	PeakRSSMB    float64   `json:"peak_rss_mb"`      // child's VmHWM
	RSSByTenthMB []float64 `json:"rss_by_tenth_mb"`  // child's VmRSS after each tenth of the backlog
	SmallN       int64     `json:"small_messages"`   // the same with a backlog of N, for comparison
	SmallPeakMB  float64   `json:"small_peak_rss_mb"`
}

const (
	childEnvVar = "CONVEYOR_BENCH_BACKLOG_CHILD"
	childDSN    = "CONVEYOR_BENCH_BACKLOG_DSN"
	childN      = "CONVEYOR_BENCH_BACKLOG_N"
	childW      = "CONVEYOR_BENCH_BACKLOG_W"
	childMax    = "CONVEYOR_BENCH_BACKLOG_MAX"
	// childSQLite is childEnvVar's value for sqlitepubsub's consumer,
	// whose childDSN is the file's path.
	childSQLite = "conveyor-sqlite"
)

// childReport is what the child prints on stdout, as one JSON line.
type childReport struct {
	Count        int64     `json:"count"`
	Capped       bool      `json:"capped,omitempty"`
	Elapsed      float64   `json:"elapsed_s"`
	PeakRSSMB    float64   `json:"peak_rss_mb"`
	RSSByTenthMB []float64 `json:"rss_by_tenth_mb"`
	Err          string    `json:"err,omitempty"`
}

// FillBacklog implements Backlogger for conveyor dbpubsub: the backlog is
// put with the public batch API, 1,000 messages a call, from W goroutines.
func (c conveyorDB) FillBacklog(ctx context.Context, env *Env, cfg Config, n int) ([]string, func() error, error) {
	in, err := openConveyorDB(ctx, env, c.options())
	if err != nil {
		return nil, nil, err
	}
	if err := prefill(ctx, in, n, cfg.W, 1000); err != nil {
		return nil, nil, fmt.Errorf("fill: %w (close: %v)", err, in.Close())
	}
	// The parent's PubSub must not consume: close it, keep the schema.
	if err := in.ps.Close(); err != nil {
		return nil, nil, err
	}
	in.ps = nil
	return []string{childEnvVar + "=conveyor", childDSN + "=" + in.schema.DSN,
		childN + "=" + strconv.Itoa(n), childW + "=" + strconv.Itoa(cfg.W),
		childMax + "=" + cfg.BacklogMax.String()}, in.Close, nil
}

func runBacklog(ctx context.Context, env *Env, cfg Config, b Backlogger) (Run, error) {
	small, _, err := backlogOnce(ctx, env, cfg, b, cfg.N)
	if err != nil {
		return Run{}, fmt.Errorf("backlog of %d: %w", cfg.N, err)
	}
	st, el, err := backlogOnce(ctx, env, cfg, b, cfg.Backlog)
	if err != nil {
		return Run{}, fmt.Errorf("backlog of %d: %w", cfg.Backlog, err)
	}
	st.SmallN, st.SmallPeakMB = small.Messages, small.PeakRSSMB
	return Run{Value: st.DrainRate, Count: st.Messages, Elapsed: el, Capped: st.Capped, Backlog: st}, nil
}

func backlogOnce(ctx context.Context, env *Env, cfg Config, b Backlogger, n int) (*BacklogStats, time.Duration, error) {
	fillStart := time.Now()
	childEnv, cleanup, err := b.FillBacklog(ctx, env, cfg, n)
	if err != nil {
		return nil, 0, err
	}
	fillRate := rate(int64(n), time.Since(fillStart))
	defer func() { _ = cleanup() }()
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.BacklogMax+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, self)
	cmd.Env = append(os.Environ(), childEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	start := time.Now()
	err = cmd.Run()
	el := time.Since(start)
	var rep childReport
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, "{") {
			_ = json.Unmarshal([]byte(line), &rep)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("consumer process: %w (%s)", err, strings.TrimSpace(out.String()))
	}
	if rep.Err != "" {
		return nil, 0, fmt.Errorf("consumer process: %s", rep.Err)
	}
	st := &BacklogStats{
		Messages:     rep.Count,
		Backlog:      int64(n),
		Capped:       rep.Capped,
		FillRate:     fillRate,
		DrainRate:    float64(rep.Count) / rep.Elapsed,
		PeakRSSMB:    rep.PeakRSSMB,
		RSSByTenthMB: rep.RSSByTenthMB,
	}
	// Not getrusage's ru_maxrss of the child: Go starts it with
	// CLONE_VM, so until exec it counts the parent's memory.
	if rep.Count < int64(n) && !rep.Capped {
		return st, el, fmt.Errorf("consumer process drained %d of %d messages", rep.Count, n)
	}
	return st, el, nil
}

// isBacklogChild reports whether this process was started as a backlog
// consumer.
func isBacklogChild() bool { return os.Getenv(childEnvVar) != "" }

// backlogChild consumes the backlog described by the environment, prints
// one JSON line and returns the exit code.
func backlogChild() int {
	rep := childMain()
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	if rep.Err != "" {
		return 1
	}
	return 0
}

func childMain() (rep childReport) {
	fail := func(err error) childReport { rep.Err = err.Error(); return rep }
	n, err := strconv.Atoi(os.Getenv(childN))
	if err != nil {
		return fail(fmt.Errorf("%s: %w", childN, err))
	}
	w, err := strconv.Atoi(os.Getenv(childW))
	if err != nil {
		return fail(fmt.Errorf("%s: %w", childW, err))
	}
	limit, err := time.ParseDuration(os.Getenv(childMax))
	if err != nil {
		return fail(fmt.Errorf("%s: %w", childMax, err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var in Instance
	if os.Getenv(childEnvVar) == childSQLite {
		sin, err := openConveyorSQLite(ctx, os.Getenv(childDSN))
		if err != nil {
			return fail(err)
		}
		defer sin.ps.Close()
		in = sin
	} else {
		db, err := dbpubsub.Open(os.Getenv(childDSN))
		if err != nil {
			return fail(err)
		}
		defer db.Close()
		ps, err := dbpubsub.New(db, conveyorDB{}.options())
		if err != nil {
			return fail(err)
		}
		defer ps.Close()
		in = &conveyorDBInstance{db: db, ps: ps, topic: ps.Topic("bench")}
	}
	c := newCounter(n)
	var tenth atomic.Int64
	rssCh := make(chan float64, 16)
	step := max(int64(n)/10, 1)
	start := time.Now()
	stop, _ := in.Consume(ctx, w, func(Msg) {}, func() {
		c.inc()
		if d := c.done.Load(); d%step == 0 && tenth.Add(1) <= 10 {
			select {
			case rssCh <- procStatusMB("VmRSS"):
			default:
			}
		}
	})
	rep.Capped = c.wait(ctx, limit)
	rep.Elapsed = time.Since(start).Seconds()
	rep.Count = c.done.Load()
	cancel()
	if err := stop(); err != nil {
		return fail(err)
	}
	close(rssCh)
	for v := range rssCh {
		rep.RSSByTenthMB = append(rep.RSSByTenthMB, v)
	}
	rep.PeakRSSMB = procStatusMB("VmHWM")
	return rep
}

// procStatusMB reads a kB field of /proc/self/status, in MiB.
func procStatusMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
