package event

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Schedule says when a periodic event is due.
type Schedule interface {
	// Next returns the first tick strictly after t, or the zero time if
	// there is none.
	Next(t time.Time) time.Time
}

// Every returns the schedule of a tick every d, aligned to multiples of d
// since the Unix epoch (UTC): Every(time.Minute) ticks on every minute,
// Every(time.Hour) on the hour, Every(24*time.Hour) at midnight UTC. Every
// process computes the same ticks, which is how a Scheduler in each of them
// dispatches each tick once. A non-positive d has no ticks (Scheduler.Add
// rejects it).
func Every(d time.Duration) Schedule { return every(d) }

type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := int64(e)
	if d <= 0 {
		return time.Time{}
	}
	n := t.UnixNano()
	r := n % d
	if r < 0 {
		r += d
	}
	return time.Unix(0, n-r+d).In(t.Location())
}

func (e every) String() string { return "@every " + time.Duration(e).String() }

// ParseCron parses a cron expression in UTC; see ParseCronIn.
func ParseCron(expr string) (Schedule, error) { return ParseCronIn(expr, time.UTC) }

// ParseCronIn parses a standard five-field cron expression, read in loc:
//
//	minute hour day-of-month month day-of-week
//
// Each field is * or a comma-separated list of values and ranges (a-b),
// each optionally stepped (*/15, 1-30/2, 5/10); months may be JAN-DEC and
// days of the week SUN-SAT (0 or 7 is Sunday). When both day fields are
// restricted, a day matching either is due (as in Vixie cron). The macros
// @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly and
// "@every <duration>" (see Every) are accepted too. Errors wrap
// ErrInvalidSchedule.
//
// The expression matches times on the wall clock of loc, and each matching
// wall-clock time ticks once, so Next always moves forward. Where daylight
// saving turns the clock back, the times it shows twice tick at their first
// showing only: "30 1 * * *" in America/New_York ticks at 01:30 EDT on the
// day summer time ends, not again at 01:30 EST. Where it moves the clock
// on, the times it skips tick at the first instant after the skip, together
// (one tick, not one each): "30 2 * * *" ticks at 03:00 EDT on the day
// summer time starts, and "*/15 * * * *" ticks at 01:45 EST and then once at
// 03:00 EDT for 02:00 to 03:00. A daily job thus runs every day, once; an
// hourly one runs once per hour the clock shows.
func ParseCronIn(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	expr = strings.TrimSpace(expr)
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("%w: %q: want a positive duration after @every", ErrInvalidSchedule, expr)
		}
		return Every(dur), nil
	}
	if m, ok := cronMacros[expr]; ok {
		expr = m
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("%w: %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", ErrInvalidSchedule, expr, len(fields))
	}
	c := &cron{expr: expr, loc: loc}
	var err error
	for i, f := range cronFields {
		var bits uint64
		if bits, err = f.parse(fields[i]); err != nil {
			return nil, fmt.Errorf("%w: %q: %s field: %v", ErrInvalidSchedule, expr, f.name, err)
		}
		switch i {
		case 0:
			c.minute = bits
		case 1:
			c.hour = bits
		case 2:
			c.dom, c.domAny = bits, fields[i] == "*"
		case 3:
			c.month = bits
		case 4:
			if bits&(1<<7) != 0 {
				bits |= 1 // 7 is Sunday too
			}
			c.dow, c.dowAny = bits, fields[i] == "*"
		}
	}
	return c, nil
}

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type cronField struct {
	name      string
	low, high int
	names     []string // names[i] is the value low+i
}

var cronFields = []cronField{
	{name: "minute", low: 0, high: 59},
	{name: "hour", low: 0, high: 23},
	{name: "day-of-month", low: 1, high: 31},
	{name: "month", low: 1, high: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day-of-week", low: 0, high: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// parse returns the set of values of s as bits.
func (f cronField) parse(s string) (uint64, error) {
	var bits uint64
	for part := range strings.SplitSeq(s, ",") {
		rng, stepText, stepped := strings.Cut(part, "/")
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("step %q: want a positive number", stepText)
			}
			step = n
		}
		lo, hi := f.low, f.high
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %q goes backwards", rng)
			}
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo = v
			if !stepped {
				hi = v
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func (f cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.low + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < f.low || v > f.high {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.low, f.high)
	}
	return v, nil
}

type cron struct {
	expr                     string
	loc                      *time.Location
	minute, hour, dom, month uint64
	dow                      uint64
	domAny, dowAny           bool
}

func (c *cron) String() string { return c.expr }

func (c *cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<t.Day()) != 0
	dow := c.dow&(1<<t.Weekday()) != 0
	if !c.domAny && !c.dowAny {
		return dom || dow
	}
	return dom && dow
}

// Next returns the first tick strictly after t, looking up to five years
// ahead: the instant of the first wall-clock minute matching the expression
// whose tick (see ParseCronIn for the hours daylight saving skips or
// repeats) is after t.
func (c *cron) Next(t time.Time) time.Time {
	lt := t.In(c.loc)
	// Wall-clock minutes are searched for as UTC times with the same
	// fields: a calendar without daylight saving, where every minute exists
	// once.
	w := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), 0, 0, time.UTC).Add(time.Minute)
	limit := w.AddDate(5, 0, 0)
	for {
		if w = c.nextWall(w, limit); w.IsZero() {
			return time.Time{}
		}
		// In an hour the clock repeats, the minutes already shown before
		// the clock went back have had their tick: look further on.
		if at := c.instant(w); at.After(t) {
			return at.In(t.Location())
		}
		w = w.Add(time.Minute)
	}
}

// nextWall returns the first wall-clock minute at or after w (a UTC time
// holding wall-clock fields) that the expression matches, or the zero time
// if there is none before limit.
func (c *cron) nextWall(w, limit time.Time) time.Time {
	for w.Before(limit) {
		switch {
		case c.month&(1<<w.Month()) == 0:
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<w.Hour()) == 0:
			w = w.Truncate(time.Hour).Add(time.Duration(skip(c.hour, w.Hour(), 24)) * time.Hour)
		case c.minute&(1<<w.Minute()) == 0:
			w = w.Add(time.Duration(skip(c.minute, w.Minute(), 60)) * time.Minute)
		default:
			return w
		}
	}
	return time.Time{}
}

// skip returns how far it is from v to the next value in set, or to n
// (the next hour, the next day) if there is none before n.
func skip(set uint64, v, n int) int {
	if rest := set >> v; rest != 0 {
		return min(bits.TrailingZeros64(rest), n-v)
	}
	return n - v
}

// instant returns the tick of the wall-clock minute w (a UTC time holding
// wall-clock fields): the first instant at which the clock in c.loc shows w
// or later. For a time the clock shows twice that is its first showing; for
// a time it skips, the instant the skip ends.
func (c *cron) instant(w time.Time) time.Time {
	// Offsets lie within -12 h and +14 h: 15 h before w, read as UTC, the
	// clock in any zone shows a time before w. Walk the zone's periods
	// from there to the first one whose clock reaches w.
	at := w.Add(-15 * time.Hour).In(c.loc)
	for {
		start, end := at.ZoneBounds()
		_, offset := at.Zone()
		first := w.Add(-time.Duration(offset) * time.Second)
		if first.Before(start) {
			first = start // the clock jumped over w at start
		}
		if end.IsZero() || first.Before(end) || !end.After(at) {
			return first
		}
		at = end.In(c.loc)
	}
}
