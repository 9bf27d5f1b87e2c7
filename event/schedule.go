package event

import (
	"fmt"
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

// Next returns the first minute after t that the expression matches,
// looking up to five years ahead.
func (c *cron) Next(t time.Time) time.Time {
	orig := t.Location()
	t = t.In(c.loc)
	t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, c.loc).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		var next time.Time
		switch {
		case c.month&(1<<t.Month()) == 0:
			next = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, c.loc)
		case !c.dayMatches(t):
			next = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, c.loc)
		case c.hour&(1<<t.Hour()) == 0:
			next = t.Add(time.Duration(60-t.Minute()) * time.Minute)
		case c.minute&(1<<t.Minute()) == 0:
			next = t.Add(time.Minute)
		default:
			return t.In(orig)
		}
		if !next.After(t) { // a daylight-saving jump; move on by a minute
			next = t.Add(time.Minute)
		}
		t = next
	}
	return time.Time{}
}
