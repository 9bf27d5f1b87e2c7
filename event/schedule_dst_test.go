package event

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"github.com/conveyorgo/conveyor/pubsub"
)

// The zones the daylight-saving tests run in, with how many clock changes
// each has in 2026: the northern and southern hemisphere, a zone that
// moves its clock by 30 minutes, and one that never moves it.
var dstZones = []struct {
	name    string
	changes int
}{
	{"America/New_York", 2},
	{"Europe/Berlin", 2},
	{"Australia/Sydney", 2},
	{"Australia/Lord_Howe", 2},
	{"Asia/Kolkata", 0},
}

// Expressions whose ticks fall in, next to and across the hours that
// daylight saving skips or repeats (01:00 to 03:00 in these zones).
var dstExprs = []string{
	"30 1 * * *", "45 1 * * *", "0 2 * * *", "15 2 * * *", "30 2 * * *", "0 3 * * *",
	"0 0 * * *", "0 * * * *", "30 * * * *", "*/15 * * * *", "* * * * *",
}

// dstDays returns, for each clock change in loc in 2026, the window from
// the local midnight before it to the local midnight a day after it; for a
// zone without changes, one day of 2026.
func dstDays(t *testing.T, loc *time.Location, changes int) [][2]time.Time {
	t.Helper()
	var days [][2]time.Time
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	for {
		_, end := at.ZoneBounds()
		if end.IsZero() || end.Year() > 2026 {
			break
		}
		l := end.In(loc).Add(-3 * time.Hour) // before the change, on its day
		from := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
		days = append(days, [2]time.Time{from, from.AddDate(0, 0, 2)})
		at = end.In(loc)
	}
	if len(days) != changes {
		t.Fatalf("%v: %d clock changes in 2026, want %d", loc, len(days), changes)
	}
	if changes == 0 {
		from := time.Date(2026, 3, 29, 0, 0, 0, 0, loc)
		days = append(days, [2]time.Time{from, from.AddDate(0, 0, 2)})
	}
	return days
}

// wallTicks is the oracle: it steps the instants of [from, to) a minute at
// a time, keeping the latest wall-clock minute the clock has shown, and
// says an instant ticks when the clock shows at it, for the first time, a
// minute the expression matches (once, however many it skipped to get
// there). Every offset of the zones tested is a whole number of minutes.
func wallTicks(c *cron, from, to time.Time) []time.Time {
	wall := func(i time.Time) time.Time {
		l := i.In(c.loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	var ticks []time.Time
	shown := wall(from.Add(-time.Minute))
	for i := from; i.Before(to); i = i.Add(time.Minute) {
		w := wall(i)
		for m := shown.Add(time.Minute); !m.After(w); m = m.Add(time.Minute) {
			if c.matches(m) {
				ticks = append(ticks, i)
				break
			}
		}
		if w.After(shown) {
			shown = w
		}
	}
	return ticks
}

// matches reports whether the wall-clock minute w (a UTC time holding the
// wall-clock fields) matches c.
func (c *cron) matches(w time.Time) bool {
	return c.month&(1<<w.Month()) != 0 && c.dayMatches(w) && c.hour&(1<<w.Hour()) != 0 && c.minute&(1<<w.Minute()) != 0
}

func parseCronIn(t *testing.T, expr string, loc *time.Location) *cron {
	t.Helper()
	s, err := ParseCronIn(expr, loc)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*cron)
}

// TestCronDaylightSaving: around every clock change of 2026 in each zone,
// Next, from any instant, is after it and is the oracle's next tick: a
// repeated time ticks at its first showing only, skipped times tick once,
// at the end of the skip.
func TestCronDaylightSaving(t *testing.T) {
	for _, z := range dstZones {
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range dstDays(t, loc, z.changes) {
			for _, expr := range dstExprs {
				c := parseCronIn(t, expr, loc)
				want := wallTicks(c, day[0], day[1])
				// Every minute (and half-minute) near the change, some further off.
				change := day[0].Add(26 * time.Hour)
				if _, end := day[0].ZoneBounds(); end.Before(day[1]) {
					change = end
				}
				for i := day[0]; i.Before(day[1]); i = i.Add(time.Minute) {
					if d := i.Sub(change); (d < -3*time.Hour || d > 3*time.Hour) && i.Minute()%7 != 0 {
						continue
					}
					for _, from := range []time.Time{i, i.Add(29 * time.Second)} {
						k := sort.Search(len(want), func(k int) bool { return want[k].After(from) })
						got := c.Next(from)
						if !got.After(from) {
							t.Fatalf("%s: %q.Next(%v) = %v, not after it", z.name, expr, from, got)
						}
						if k < len(want) && !got.Equal(want[k]) {
							t.Fatalf("%s: %q.Next(%v) = %v, want %v", z.name, expr, from, got.In(loc), want[k].In(loc))
						}
					}
				}
			}
		}
	}
}

// TestCronDaylightSavingNamed pins the semantics ParseCronIn documents on
// the days summer time starts and ends in New York and Lord Howe.
func TestCronDaylightSavingNamed(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	lh, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		expr       string
		loc        *time.Location
		from, want string
	}{
		// The case: 01:15 EST comes after 01:30 EDT, which ticked.
		{"30 1 * * *", ny, "2026-11-01T01:15:00-05:00", "2026-11-02T01:30:00-05:00"},
		{"30 1 * * *", ny, "2026-11-01T00:00:00-04:00", "2026-11-01T01:30:00-04:00"}, // the first showing
		{"30 1 * * *", ny, "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}, // not the second
		{"0 2 * * *", ny, "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00"},
		{"*/15 * * * *", ny, "2026-11-01T01:45:00-04:00", "2026-11-01T02:00:00-05:00"}, // not 01:00 EST…01:45 EST
		{"30 2 * * *", ny, "2026-03-08T00:00:00-05:00", "2026-03-08T03:00:00-04:00"},   // skipped: at the skip's end
		{"*/15 * * * *", ny, "2026-03-08T01:45:00-05:00", "2026-03-08T03:00:00-04:00"}, // 02:00…03:00: one tick
		{"*/15 * * * *", ny, "2026-03-08T03:00:00-04:00", "2026-03-08T03:15:00-04:00"},
		{"45 1 * * *", lh, "2026-04-05T01:50:00+10:30", "2026-04-06T01:45:00+10:30"}, // repeated half-hour
		{"15 2 * * *", lh, "2026-10-04T00:00:00+10:30", "2026-10-04T02:30:00+11:00"}, // skipped half-hour
	}
	for _, c := range cases {
		if got := parseCronIn(t, c.expr, c.loc).Next(at(c.from)); !got.Equal(at(c.want)) {
			t.Errorf("%q.Next(%s) = %v, want %s", c.expr, c.from, got.In(c.loc), c.want)
		}
	}
}

// replayClock is a clock for one schedule's loop that jumps to each
// timer's end at once, until end: then it stops the Scheduler.
type replayClock struct {
	mu   sync.Mutex
	now  time.Time
	end  time.Time
	stop context.CancelFunc
}

func (c *replayClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *replayClock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(max(d, 0))
	if !at.Before(c.end) {
		c.stop()
		return ch, func() {}
	}
	c.now = at
	ch <- at
	return ch, func() {}
}

// memoryDispatcher counts dispatches as an in-process backend takes them:
// every Dispatch is a message (no unique keys), none deduplicated.
type memoryDispatcher struct {
	Dispatcher
	n atomic.Int64
}

func (d *memoryDispatcher) DispatchUnique(context.Context, string, Event, ...Option) (bool, error) {
	return false, pubsub.ErrUnsupported
}

func (d *memoryDispatcher) Dispatch(context.Context, Event, ...Option) error {
	d.n.Add(1)
	return nil
}

type replayTick struct{}

func (replayTick) Type() EventType { return "com.example.replay" }

// countingHandler counts the records logged at Warn or above.
type countingHandler struct {
	slog.Handler
	n *atomic.Int64
}

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h countingHandler) Handle(context.Context, slog.Record) error {
	h.n.Add(1)
	return nil
}

// replay runs a Scheduler with one schedule over (from, to) on a replay
// clock and returns the ticks it dispatched and how many warnings and
// errors it logged. It stops the Scheduler after limit dispatches.
func replay(t *testing.T, sched Schedule, from, to time.Time, limit int) (ticks []time.Time, logged int64) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var warned atomic.Int64
	d := &memoryDispatcher{}
	s := NewScheduler(d, SchedulerOptions{Logger: slog.New(countingHandler{n: &warned})})
	s.clock = &replayClock{now: from, end: to, stop: stop}
	var mu sync.Mutex
	err := s.Add("replay", sched, func(tick time.Time) Event {
		mu.Lock()
		defer mu.Unlock()
		ticks = append(ticks, tick)
		if len(ticks) >= limit {
			stop()
		}
		return replayTick{}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if int(d.n.Load()) != len(ticks) {
		t.Fatalf("%d dispatches for %d ticks", d.n.Load(), len(ticks))
	}
	return ticks, warned.Load()
}

// TestSchedulerReplaysDaylightSaving replays the Scheduler's loop on a
// simulated clock over the days of each clock change of 2026, on a
// dispatcher that keeps every dispatch (as the memory backend does): each
// scheduled time is dispatched once, none twice, none out of order, and
// nothing is logged.
func TestSchedulerReplaysDaylightSaving(t *testing.T) {
	for _, z := range dstZones {
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range dstDays(t, loc, z.changes) {
			for _, expr := range []string{"30 1 * * *", "45 1 * * *", "30 2 * * *", "0 * * * *", "*/15 * * * *"} {
				c := parseCronIn(t, expr, loc)
				want := wallTicks(c, day[0].Add(time.Minute), day[1]) // the loop starts after day[0]
				got, logged := replay(t, c, day[0], day[1], len(want)+10)
				if k := firstDiff(got, want); k >= 0 || logged != 0 {
					t.Errorf("%s, %q from %v: dispatched %d ticks (%d warnings logged), want %d; from #%d: got %v, want %v",
						z.name, expr, day[0], len(got), logged, len(want), k, inZone(got, loc, k), inZone(want, loc, k))
				}
			}
		}
	}
}

// firstDiff returns the index of the first tick where got and want differ,
// or -1 if they are the same.
func firstDiff(got, want []time.Time) int {
	for k := range max(len(got), len(want)) {
		if k >= len(got) || k >= len(want) || !got[k].Equal(want[k]) {
			return k
		}
	}
	return -1
}

// inZone formats up to five ticks of ts from the k-th, in loc.
func inZone(ts []time.Time, loc *time.Location, k int) []string {
	var s []string
	for _, t := range ts[min(max(k, 0), len(ts)):min(max(k, 0)+5, len(ts))] {
		s = append(s, t.In(loc).Format("01-02 15:04 MST"))
	}
	return s
}

// backwards is a broken Schedule: its next tick is half an hour before t
// once t passes stuck.
type backwards struct{ stuck time.Time }

func (b backwards) Next(t time.Time) time.Time {
	if t.Before(b.stuck) {
		return t.Truncate(time.Hour).Add(time.Hour)
	}
	return t.Add(-30 * time.Minute)
}

// TestSchedulerStopsAScheduleThatGoesBackwards: a Schedule whose Next is not
// after its last tick is stopped, with an error, rather than dispatched
// again and again.
func TestSchedulerStopsAScheduleThatGoesBackwards(t *testing.T) {
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	got, logged := replay(t, backwards{stuck: from.Add(3 * time.Hour)}, from, from.Add(24*time.Hour), 100)
	want := []time.Time{from.Add(time.Hour), from.Add(2 * time.Hour), from.Add(3 * time.Hour)}
	if !slices.EqualFunc(got, want, time.Time.Equal) || logged == 0 {
		t.Fatalf("dispatched %v, logged %d; want %v and an error logged", got, logged, want)
	}
}
