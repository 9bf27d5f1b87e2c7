package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Scenario ids, in the order they run and are printed.
const (
	ScEnqueue   = "enqueue"   // 1. one call per message, from W goroutines
	ScBatch     = "batch"     // 2. BatchSize messages per call, from W goroutines
	ScDrain     = "drain"     // 3. N waiting, consumed and acked by W workers
	ScLatency   = "latency"   // 4. enqueue-to-handler at Rate msgs/s for LatencyFor
	ScRoundtrip = "roundtrip" // 5. in memory: W producers and W consumers at once
	ScPgbench   = "pgbench"   // reference: pgbench -N, transactions per second
	ScBacklog   = "backlog"   // 6. Backlog messages drained by a separate process
	ScEvents    = "events"    // 7. typed events: W dispatchers and a service of W workers at once
	ScFanOut    = "fanout"    // 8. one producer, fanOutSubs subscriptions of W/fanOutSubs workers each
)

var scenarioOrder = []string{ScEnqueue, ScBatch, ScDrain, ScLatency, ScRoundtrip, ScPgbench, ScBacklog, ScEvents, ScFanOut}

// Run is one repetition of a scenario on one system.
type Run struct {
	Value   float64       `json:"value"`                    // msgs/s (tps for pgbench; ms p50 for latency)
	Count   int64         `json:"count"`                    // messages (or transactions) measured
	Elapsed time.Duration `json:"elapsed_ns"`               // timed part
	Capped  bool          `json:"capped,omitempty"`         // stopped by MaxRun before the end
	P50     float64       `json:"p50_ms,omitempty"`         // latency only
	P90     float64       `json:"p90_ms,omitempty"`         // latency only
	P99     float64       `json:"p99_ms,omitempty"`         // latency only
	Max     float64       `json:"max_ms,omitempty"`         // latency only
	Lost    int64         `json:"lost,omitempty"`           // latency: enqueued, not handled in time
	Backlog *BacklogStats `json:"backlog,omitempty"`        // backlog only
	Subs    int           `json:"subscriptions,omitempty"`  // fan-out: subscriptions made (0: publish only)
	Publish float64       `json:"publish_msgs_s,omitempty"` // fan-out: msgs/s published (Value: delivered, or published with no subscription)
	// CPU is the CPU time (user and system) the bench process spent per
	// message in the timed part, in microseconds: round trip and events
	// (in memory, every goroutine of the system runs in this process).
	CPU float64 `json:"cpu_us_per_msg,omitempty"`
}

// applicable reports whether scenario sc runs on system s, and why not.
func applicable(s System, sc string) (bool, string) {
	if l, ok := s.(Limited); ok && l.Scenarios() != nil && !slices.Contains(l.Scenarios(), sc) {
		return false, ""
	}
	_, standalone := s.(Standalone)
	switch sc {
	case ScPgbench:
		return standalone, ""
	case ScEnqueue, ScBatch, ScDrain, ScLatency:
		return !standalone && (s.Kind() == KindPostgres || s.Kind() == KindNATS || s.Kind() == KindKafka || s.Kind() == KindSQLite), ""
	case ScRoundtrip:
		return s.Kind() == KindMemory, ""
	case ScBacklog:
		_, ok := s.(Backlogger)
		return ok, ""
	case ScFanOut:
		_, ok := s.(FanOut)
		return ok, ""
	case ScEvents:
		// Only the event systems, which name it (a queue system has no
		// event layer).
		l, ok := s.(Limited)
		return ok && slices.Contains(l.Scenarios(), ScEvents), ""
	}
	return false, ""
}

// runScenario runs one repetition of sc on s.
func runScenario(ctx context.Context, env *Env, cfg Config, s System, sc string) (r Run, err error) {
	cfg = cfg.forKind(s.Kind())
	switch sc {
	case ScPgbench:
		start := time.Now()
		tps, n, err := s.(Standalone).Measure(ctx, env, cfg)
		return Run{Value: tps, Count: n, Elapsed: time.Since(start)}, err
	case ScBacklog:
		return runBacklog(ctx, env, cfg, s.(Backlogger))
	}
	inst, err := s.Open(ctx, env, cfg)
	if err != nil {
		return Run{}, fmt.Errorf("open: %w", err)
	}
	defer func() {
		if cerr := inst.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	switch sc {
	case ScEnqueue:
		if err := warmUp(ctx, inst, nil, cfg); err != nil {
			return Run{}, fmt.Errorf("warm-up: %w", err)
		}
		return runEnqueue(ctx, inst, cfg)
	case ScBatch:
		b, ok := inst.(BatchEnqueuer)
		if !ok {
			return Run{}, errNoBatch
		}
		if err := warmUp(ctx, inst, b, cfg); err != nil {
			return Run{}, fmt.Errorf("warm-up: %w", err)
		}
		return runBatch(ctx, b, cfg)
	case ScDrain:
		return runDrain(ctx, inst, cfg)
	case ScLatency:
		return runLatency(ctx, inst, cfg)
	case ScRoundtrip:
		return runRoundtrip(ctx, inst, cfg)
	case ScEvents:
		return runEvents(ctx, inst, cfg, s.Kind())
	case ScFanOut:
		n := cfg.N
		if s.Kind() == KindMemory {
			n = cfg.RoundtripN
		}
		return runFanOut(ctx, inst, cfg, n, s.(FanOut).FanOutSubs())
	}
	return Run{}, fmt.Errorf("unknown scenario %q", sc)
}

var (
	errNoBatch         = errors.New("no batch API")
	errNoSubscriptions = errors.New("no subscriptions")
)

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// parallel runs f in w goroutines and returns the first error.
func parallel(w int, f func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, w)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// warmUp makes, untimed, one call from each of the W producers of the
// enqueue scenarios (a batch of the batch size when b is not nil), so that
// the timed run measures the calls and not the setting up of connections
// and prepared statements: at N=20,000 the batch scenario lasts ~100 ms,
// and that set-up took a varying share of it. Every system gets the same.
// Its messages are numbered 0 and are never consumed.
func warmUp(ctx context.Context, inst Instance, b BatchEnqueuer, cfg Config) error {
	return parallel(cfg.W, func() error {
		now := time.Now().UnixNano()
		if b == nil {
			return inst.Enqueue(ctx, Msg{T: now})
		}
		ms := make([]Msg, cfg.BatchSize)
		for i := range ms {
			ms[i] = Msg{T: now}
		}
		return b.EnqueueBatch(ctx, ms)
	})
}

func runEnqueue(ctx context.Context, inst Instance, cfg Config) (Run, error) {
	var next, sent atomic.Int64
	var capped atomic.Bool
	start := time.Now()
	err := parallel(cfg.W, func() error {
		for {
			i := next.Add(1)
			if i > int64(cfg.N) {
				return nil
			}
			if time.Since(start) > cfg.MaxRun {
				capped.Store(true)
				return nil
			}
			if err := inst.Enqueue(ctx, Msg{N: i, T: time.Now().UnixNano()}); err != nil {
				return err
			}
			sent.Add(1)
		}
	})
	el := time.Since(start)
	return Run{Value: rate(sent.Load(), el), Count: sent.Load(), Elapsed: el, Capped: capped.Load()}, err
}

func runBatch(ctx context.Context, b BatchEnqueuer, cfg Config) (Run, error) {
	var next, sent atomic.Int64
	var capped atomic.Bool
	start := time.Now()
	err := parallel(cfg.W, func() error {
		ms := make([]Msg, 0, cfg.BatchSize)
		for {
			first := next.Add(int64(cfg.BatchSize)) - int64(cfg.BatchSize) + 1
			if first > int64(cfg.N) {
				return nil
			}
			if time.Since(start) > cfg.MaxRun {
				capped.Store(true)
				return nil
			}
			last := min(first+int64(cfg.BatchSize)-1, int64(cfg.N))
			ms = ms[:0]
			now := time.Now().UnixNano()
			for i := first; i <= last; i++ {
				ms = append(ms, Msg{N: i, T: now})
			}
			if err := b.EnqueueBatch(ctx, ms); err != nil {
				return err
			}
			sent.Add(int64(len(ms)))
		}
	})
	el := time.Since(start)
	return Run{Value: rate(sent.Load(), el), Count: sent.Load(), Elapsed: el, Capped: capped.Load()}, err
}

// prefill enqueues n messages, in batches where the system has them, from
// w goroutines, outside any timing.
func prefill(ctx context.Context, inst Instance, n, w, batch int) error {
	var next atomic.Int64
	if b, ok := inst.(BatchEnqueuer); ok {
		return parallel(w, func() error {
			ms := make([]Msg, 0, batch)
			for {
				first := next.Add(int64(batch)) - int64(batch) + 1
				if first > int64(n) {
					return nil
				}
				last := min(first+int64(batch)-1, int64(n))
				ms = ms[:0]
				for i := first; i <= last; i++ {
					ms = append(ms, Msg{N: i})
				}
				if err := b.EnqueueBatch(ctx, ms); err != nil {
					return err
				}
			}
		})
	}
	return parallel(w, func() error {
		for {
			i := next.Add(1)
			if i > int64(n) {
				return nil
			}
			if err := inst.Enqueue(ctx, Msg{N: i}); err != nil {
				return err
			}
		}
	})
}

// counter calls close on its channel when n messages are done.
type counter struct {
	n    int64
	done atomic.Int64
	all  chan struct{}
}

func newCounter(n int) *counter { return &counter{n: int64(n), all: make(chan struct{})} }

func (c *counter) inc() {
	if c.done.Add(1) == c.n {
		close(c.all)
	}
}

// wait waits until every message is done, ctx ends or limit passes, and
// reports whether it was cut short.
func (c *counter) wait(ctx context.Context, limit time.Duration) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-c.all:
		return false
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}

func runDrain(ctx context.Context, inst Instance, cfg Config) (Run, error) {
	if err := prefill(ctx, inst, cfg.N, cfg.W, 1000); err != nil {
		return Run{}, fmt.Errorf("prefill: %w", err)
	}
	c := newCounter(cfg.N)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	stop, err := inst.Consume(cctx, cfg.W, func(Msg) {}, c.inc)
	if err != nil {
		return Run{}, err
	}
	capped := c.wait(ctx, cfg.MaxRun)
	el := time.Since(start)
	n := c.done.Load()
	cancel()
	if err := stop(); err != nil {
		return Run{}, fmt.Errorf("stop consumers: %w", err)
	}
	return Run{Value: rate(n, el), Count: n, Elapsed: el, Capped: capped}, nil
}

func runLatency(ctx context.Context, inst Instance, cfg Config) (Run, error) {
	total := int(float64(cfg.Rate) * cfg.LatencyFor.Seconds())
	if total < 1 {
		total = 1
	}
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	c := newCounter(total)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := inst.Consume(cctx, cfg.W, func(m Msg) {
		d := time.Duration(time.Now().UnixNano() - m.T)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		c.inc()
	}, func() {})
	if err != nil {
		return Run{}, err
	}
	// Let the consumers start (connect, LISTEN, first poll) before the clock.
	time.Sleep(500 * time.Millisecond)
	interval := time.Second / time.Duration(cfg.Rate)
	start := time.Now()
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if err := inst.Enqueue(ctx, Msg{N: int64(i + 1), T: time.Now().UnixNano()}); err != nil {
			cancel()
			_ = stop()
			return Run{}, err
		}
	}
	c.wait(ctx, 3*time.Second)
	el := time.Since(start)
	cancel()
	if err := stop(); err != nil {
		return Run{}, fmt.Errorf("stop consumers: %w", err)
	}
	mu.Lock()
	got := append([]time.Duration(nil), lat...)
	mu.Unlock()
	r := Run{Count: int64(len(got)), Elapsed: el, Lost: int64(total - len(got))}
	if len(got) > 0 {
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		r.P50, r.P90, r.P99 = ms(pct(got, 50)), ms(pct(got, 90)), ms(pct(got, 99))
		r.Max = ms(got[len(got)-1])
		r.Value = r.P50
	}
	return r, nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runRoundtrip(ctx context.Context, inst Instance, cfg Config) (Run, error) {
	return produceConsume(ctx, inst, cfg, cfg.RoundtripN, false)
}

// runEvents is the round trip of typed events: -events-n of them in memory,
// N on PostgreSQL, each stamped with the time of its dispatch.
func runEvents(ctx context.Context, inst Instance, cfg Config, kind Kind) (Run, error) {
	n := cfg.N
	if kind == KindMemory {
		n = cfg.EventsN
	}
	return produceConsume(ctx, inst, cfg, n, true)
}

// produceConsume starts W consumers, then enqueues n messages from W
// goroutines; the clock runs from the first enqueue until the nth message
// is done. stamp sets each message's T to the time of its enqueue. A
// message handled as the zero Msg (it did not decode) fails the run.
func produceConsume(ctx context.Context, inst Instance, cfg Config, n int, stamp bool) (Run, error) {
	c := newCounter(n)
	var garbled atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := inst.Consume(cctx, cfg.W, func(m Msg) {
		if m.N == 0 {
			garbled.Add(1)
		}
	}, c.inc)
	if err != nil {
		return Run{}, err
	}
	var next atomic.Int64
	cpu0 := processCPU()
	start := time.Now()
	perr := make(chan error, 1)
	go func() {
		perr <- parallel(cfg.W, func() error {
			for {
				i := next.Add(1)
				if i > int64(n) || cctx.Err() != nil {
					return nil
				}
				m := Msg{N: i}
				if stamp {
					m.T = time.Now().UnixNano()
				}
				if err := inst.Enqueue(cctx, m); err != nil {
					if cctx.Err() != nil {
						return nil
					}
					return err
				}
			}
		})
	}()
	capped := c.wait(ctx, cfg.MaxRun)
	el := time.Since(start)
	cpu := processCPU() - cpu0
	done := c.done.Load()
	cancel()
	err = <-perr
	if serr := stop(); serr != nil && err == nil {
		err = serr
	}
	if g := garbled.Load(); g > 0 && err == nil {
		err = fmt.Errorf("%d of %d messages were handled garbled", g, done)
	}
	run := Run{Value: rate(done, el), Count: done, Elapsed: el, Capped: capped}
	if done > 0 {
		run.CPU = float64(cpu) / float64(time.Microsecond) / float64(done)
	}
	return run, err
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fanOutSubs is the number of subscriptions of the fan-out scenario.
const fanOutSubs = 4

// runFanOut makes subs subscriptions, starts W/subs consumers on each, then
// publishes n messages in calls of the batch size from one goroutine. The
// publish rate is n over the time until the last call returned; the
// delivered rate is subs × n over the time until every subscription has
// acked its n. With no subscription, W consumers read the plain topic (its
// default subscription), the baseline of the publish rate: the same
// producer and as many consumers, one copy of each message.
func runFanOut(ctx context.Context, inst Instance, cfg Config, n, subs int) (Run, error) {
	b, ok := inst.(BatchEnqueuer)
	if !ok {
		return Run{}, errNoBatch
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stops []func() error
	stopAll := func() error {
		cancel()
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop())
		}
		return errors.Join(errs...)
	}
	counters := make([]*counter, subs)
	var garbled atomic.Int64
	handle := func(m Msg) {
		if m.N == 0 {
			garbled.Add(1)
		}
	}
	if subs == 0 {
		c := newCounter(n)
		stop, err := inst.Consume(cctx, cfg.W, handle, c.inc)
		if err != nil {
			return Run{}, err
		}
		counters, stops = []*counter{c}, []func() error{stop}
	}
	for i := range subs {
		counters[i] = newCounter(n)
		stop, err := consumeSubscription(ctx, cctx, inst, fmt.Sprintf("sub%d", i+1), max(1, cfg.W/subs), handle, counters[i].inc)
		if err != nil {
			return Run{}, errors.Join(err, stopAll())
		}
		stops = append(stops, stop)
	}
	// Let the consumers start (connect, LISTEN, first poll) before the clock.
	time.Sleep(500 * time.Millisecond)
	var sent int64
	var perr error
	start := time.Now()
	ms := make([]Msg, 0, cfg.BatchSize)
	for first := 1; first <= n && time.Since(start) <= cfg.MaxRun; first += cfg.BatchSize {
		ms = ms[:0]
		now := time.Now().UnixNano()
		for i := first; i < first+cfg.BatchSize && i <= n; i++ {
			ms = append(ms, Msg{N: int64(i), T: now})
		}
		if perr = b.EnqueueBatch(ctx, ms); perr != nil {
			break
		}
		sent += int64(len(ms))
	}
	published := time.Since(start)
	if perr == nil {
		for _, c := range counters {
			c.wait(ctx, max(0, cfg.MaxRun-time.Since(start)))
		}
	}
	el := time.Since(start)
	var delivered int64
	for _, c := range counters {
		delivered += c.done.Load()
	}
	err := perr
	if serr := stopAll(); serr != nil && err == nil {
		err = fmt.Errorf("stop consumers: %w", serr)
	}
	if g := garbled.Load(); g > 0 && err == nil {
		err = fmt.Errorf("%d of %d messages were handled garbled", g, delivered)
	}
	copies := int64(max(subs, 1))
	return Run{Subs: subs, Publish: rate(sent, published), Capped: sent < int64(n) || delivered < copies*sent,
		Value: rate(delivered, el), Count: delivered, Elapsed: el}, err
}

// consumeSubscription makes subscription name of inst's topic (with ctx)
// and starts its consumers (with cctx, which stops them).
func consumeSubscription(ctx, cctx context.Context, inst Instance, name string, workers int, handle func(Msg), done func()) (func() error, error) {
	f, ok := inst.(FanOuter)
	if !ok {
		return nil, errNoSubscriptions
	}
	consume, err := f.Subscribe(ctx, name)
	if err != nil {
		return nil, err
	}
	return consume(cctx, workers, handle, done)
}
