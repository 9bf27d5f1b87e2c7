package event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"
)

func TestEvery(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		d          time.Duration
		from, want string
	}{
		{time.Minute, "2026-03-01T10:15:30Z", "2026-03-01T10:16:00Z"},
		{time.Minute, "2026-03-01T10:15:00Z", "2026-03-01T10:16:00Z"}, // strictly after
		{time.Hour, "2026-03-01T10:15:30Z", "2026-03-01T11:00:00Z"},
		{24 * time.Hour, "2026-03-01T10:15:30+02:00", "2026-03-02T00:00:00Z"},
		{15 * time.Second, "2026-03-01T10:15:59.999Z", "2026-03-01T10:16:00Z"},
		{time.Minute, "1969-12-31T23:59:30Z", "1970-01-01T00:00:00Z"}, // before the epoch
	}
	for _, c := range cases {
		got := event.Every(c.d).Next(at(c.from))
		if !got.Equal(at(c.want)) {
			t.Errorf("Every(%v).Next(%s) = %v, want %s", c.d, c.from, got, c.want)
		}
	}
	if got := event.Every(0).Next(time.Now()); !got.IsZero() {
		t.Errorf("Every(0).Next = %v, want zero", got)
	}
}

func TestCron(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone data: %v", err) // the zone cases need tzdata
	}
	cases := []struct {
		expr       string
		loc        *time.Location
		from, want string
	}{
		{"* * * * *", nil, "2026-03-01T10:15:30Z", "2026-03-01T10:16:00Z"},
		{"*/15 * * * *", nil, "2026-03-01T10:15:00Z", "2026-03-01T10:30:00Z"},
		{"0 9 * * MON-FRI", nil, "2026-02-27T09:00:00Z", "2026-03-02T09:00:00Z"}, // Friday → Monday
		{"30 2 1 * *", nil, "2026-01-31T00:00:00Z", "2026-02-01T02:30:00Z"},
		{"0 0 31 * *", nil, "2026-02-01T00:00:00Z", "2026-03-31T00:00:00Z"},  // skips February
		{"0 0 29 2 *", nil, "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},  // leap day
		{"0 12 13 * 5", nil, "2026-03-01T00:00:00Z", "2026-03-06T12:00:00Z"}, // 13th OR Friday
		{"5,10-12/2 * * * *", nil, "2026-03-01T10:05:00Z", "2026-03-01T10:10:00Z"},
		{"0 0 * * 7", nil, "2026-03-02T00:00:00Z", "2026-03-08T00:00:00Z"}, // 7 is Sunday
		{"0 0 * JAN,jul *", nil, "2026-03-01T00:00:00Z", "2026-07-01T00:00:00Z"},
		{"@hourly", nil, "2026-03-01T10:15:00Z", "2026-03-01T11:00:00Z"},
		{"@daily", nil, "2026-03-01T10:15:00Z", "2026-03-02T00:00:00Z"},
		{"@weekly", nil, "2026-03-01T10:15:00Z", "2026-03-08T00:00:00Z"},
		{"@monthly", nil, "2026-03-01T10:15:00Z", "2026-04-01T00:00:00Z"},
		{"@yearly", nil, "2026-03-01T10:15:00Z", "2027-01-01T00:00:00Z"},
		{"@every 10m", nil, "2026-03-01T10:15:00Z", "2026-03-01T10:20:00Z"},
		{"0 9 * * *", ny, "2026-03-01T00:00:00Z", "2026-03-01T14:00:00Z"},
		// 2:30 does not exist on 2026-03-08 in New York: 03:00 EDT, where the skip ends.
		{"30 2 * * *", ny, "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"},
	}
	for _, c := range cases {
		s, err := event.ParseCronIn(c.expr, c.loc)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", c.expr, err)
			continue
		}
		from, _ := time.Parse(time.RFC3339, c.from)
		want, _ := time.Parse(time.RFC3339, c.want)
		if got := s.Next(from); !got.Equal(want) {
			t.Errorf("%q.Next(%s) = %v, want %s", c.expr, c.from, got.UTC(), c.want)
		}
	}
	if got := mustCron(t, "0 0 30 2 *").Next(time.Now()); !got.IsZero() {
		t.Errorf("February 30th: Next = %v, want zero (never)", got)
	}
}

func mustCron(t *testing.T, expr string) event.Schedule {
	t.Helper()
	s, err := event.ParseCron(expr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCronErrors(t *testing.T) {
	for _, expr := range []string{
		"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8",
		"*/0 * * * *", "5-1 * * * *", "a * * * *", "1,,2 * * * *", "* * * FOO *", "@every", "@every -1s", "@sometimes",
	} {
		if _, err := event.ParseCron(expr); !errors.Is(err, event.ErrInvalidSchedule) {
			t.Errorf("ParseCron(%q): %v, want ErrInvalidSchedule", expr, err)
		}
	}
}
