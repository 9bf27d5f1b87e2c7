package event

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// SchedulerOptions configures a Scheduler. The zero value means the
// defaults.
type SchedulerOptions struct {
	// Logger receives the failures no caller can be given (a tick that
	// could not be dispatched). nil means slog.Default().
	Logger *slog.Logger
}

// Scheduler dispatches events on schedules: periodic events.
//
//	s := event.NewScheduler(dispatcher, event.SchedulerOptions{})
//	_ = s.Add("hourly-report", event.Every(time.Hour), func(tick time.Time) event.Event {
//		return ReportDue{Hour: tick}
//	})
//	go s.Run(ctx)
//
// With several processes on one database, each running the same
// Scheduler, each tick is dispatched once: the Scheduler dispatches with
// DispatchUnique, keyed by the schedule's name and the tick's time, which
// every process computes alike. When the topic cannot enqueue uniquely
// (pubsub.ErrUnsupported: in-process backends, where there is one process)
// it dispatches with Dispatch. The tick's event has that key as its id and
// the tick as its time, so consumers can deduplicate too.
//
// Ticks missed while no Scheduler ran are not made up for. A tick that fails
// to dispatch is retried with a backoff for up to a minute, then logged.
// Register a Scheduler in the injector (di.RegisterSingleton) to have
// di.Shutdown stop it.
type Scheduler struct {
	d     Dispatcher
	log   *slog.Logger
	clock clock

	mu      sync.Mutex
	entries []*scheduleEntry
	started bool
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type scheduleEntry struct {
	name     string
	sched    Schedule
	make     func(tick time.Time) Event
	noUnique bool // the topic said ErrUnsupported: use Dispatch
}

// NewScheduler returns a Scheduler dispatching through d.
func NewScheduler(d Dispatcher, opts SchedulerOptions) *Scheduler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Scheduler{d: d, log: opts.Logger, clock: wallClock{}}
}

// clock is the time a Scheduler goes by; tests replay days on one of their
// own.
type clock interface {
	Now() time.Time
	// Timer returns a channel that receives once d has passed, and a func
	// that stops it.
	Timer(d time.Duration) (<-chan time.Time, func())
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// TickKey is the key (and the event id) under which a Scheduler dispatches
// the tick at tick of the schedule named name.
func TickKey(name string, tick time.Time) string {
	return "schedule:" + name + "@" + tick.UTC().Format(time.RFC3339Nano)
}

// Add schedules the event make returns for each tick of sched, under name,
// which must be unique in s and the same in every process that runs the
// schedule. It fails, wrapping ErrInvalidSchedule, for an empty or
// duplicate name, a nil make, or a schedule with no tick ahead, and with
// ErrStarted once s has started.
func (s *Scheduler) Add(name string, sched Schedule, make func(tick time.Time) Event) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidSchedule)
	case sched == nil || make == nil:
		return fmt.Errorf("%w: %q: nil schedule or nil make", ErrInvalidSchedule, name)
	}
	if now := s.clock.Now(); !sched.Next(now).After(now) {
		return fmt.Errorf("%w: %q: the schedule has no tick after now", ErrInvalidSchedule, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("%w: add schedule %q to a running scheduler", ErrStarted, name)
	}
	for _, e := range s.entries {
		if e.name == name {
			return fmt.Errorf("%w: two schedules named %q", ErrInvalidSchedule, name)
		}
	}
	s.entries = append(s.entries, &scheduleEntry{name: name, sched: sched, make: make})
	return nil
}

// Start starts dispatching in goroutines of s until ctx ends or Shutdown is
// called. A Scheduler starts once.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("%w: scheduler", ErrStarted)
	}
	s.started = true
	ctx, s.stop = context.WithCancel(ctx)
	for _, e := range s.entries {
		s.wg.Add(1)
		go s.loop(ctx, e)
	}
	return nil
}

// Run starts s (see Start) and blocks until ctx ends or Shutdown is called,
// and its goroutines have ended.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	s.wg.Wait()
	return nil
}

// Shutdown stops s and waits for its goroutines, or for ctx to end. A tick
// being dispatched is canceled.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.started = true // a Scheduler shut down never starts
	stop := s.stop
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("event: shut down the scheduler: %w", ctx.Err())
	}
}

// loop dispatches e's ticks until ctx ends. Each tick is after the one
// before, whatever e's Schedule returns: a tick at or before the last one
// is never dispatched, and a Schedule that does not move forward from its
// last tick is stopped with an error logged.
func (s *Scheduler) loop(ctx context.Context, e *scheduleEntry) {
	defer s.wg.Done()
	next := e.sched.Next(s.clock.Now())
	for !next.IsZero() {
		c, stop := s.clock.Timer(next.Sub(s.clock.Now()))
		select {
		case <-ctx.Done():
			stop()
			return
		case <-c:
		}
		s.tick(ctx, e, next)
		following := e.sched.Next(next)
		if now := s.clock.Now(); !following.IsZero() && following.Before(now) {
			s.log.Warn("event: schedule fell behind; skipping ticks", slog.String("schedule", e.name),
				slog.Time("from", following), slog.Time("to", now))
			following = e.sched.Next(now)
		}
		if !following.IsZero() && !following.After(next) {
			s.log.Error("event: schedule does not move forward; stopped", slog.String("schedule", e.name),
				slog.Time("tick", next), slog.Time("next", following))
			return
		}
		next = following
	}
}

// tick dispatches e's event for tick, retrying failures with a backoff
// until the tick is a minute old or ctx ends.
func (s *Scheduler) tick(ctx context.Context, e *scheduleEntry, tick time.Time) {
	wait := 100 * time.Millisecond
	for {
		err := s.dispatch(ctx, e, tick)
		if err == nil || ctx.Err() != nil {
			return
		}
		if s.clock.Now().Sub(tick) > time.Minute {
			s.log.Error("event: scheduled tick not dispatched", slog.String("schedule", e.name),
				slog.Time("tick", tick), slog.Any("error", err))
			return
		}
		s.log.Warn("event: scheduled tick failed; retrying", slog.String("schedule", e.name),
			slog.Time("tick", tick), slog.Any("error", err))
		c, stop := s.clock.Timer(wait)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-c:
		}
		wait = min(2*wait, 10*time.Second)
	}
}

func (s *Scheduler) dispatch(ctx context.Context, e *scheduleEntry, tick time.Time) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the event maker of schedule %q: %v", ErrPanic, e.name, r)
		}
	}()
	ev := e.make(tick)
	key := TickKey(e.name, tick)
	opts := []Option{WithID(key), WithTime(tick.UTC())}
	if !e.noUnique {
		_, err := s.d.DispatchUnique(ctx, key, ev, opts...)
		if !errors.Is(err, pubsub.ErrUnsupported) {
			return err
		}
		e.noUnique = true // only this entry's goroutine touches it
	}
	return s.d.Dispatch(ctx, ev, opts...)
}
