package pubsub

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestBackoffGrowsAndCaps(t *testing.T) {
	p := RetryPolicy{MinBackoff: time.Second, MaxBackoff: 10 * time.Second, Jitter: -1}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := p.Backoff(1000); got != 10*time.Second {
		t.Errorf("Backoff(1000) = %v, want the cap", got)
	}
}

func TestBackoffJitter(t *testing.T) {
	p := RetryPolicy{MinBackoff: time.Second, Jitter: 0.1}
	seen := map[time.Duration]bool{}
	for range 100 {
		d := p.Backoff(1)
		if d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("Backoff(1) = %v, want within ±10%% of 1s", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("100 backoffs took %d distinct values, want them spread", len(seen))
	}
}

func TestDefaults(t *testing.T) {
	p := RetryPolicy{}.WithDefaults()
	if p.MaxAttempts != DefaultMaxAttempts || p.MinBackoff != DefaultMinBackoff || p.MaxBackoff != DefaultMaxBackoff || p.Jitter != DefaultJitter {
		t.Fatalf("zero policy with defaults = %+v", p)
	}
	if (RetryPolicy{}).Exhausted(DefaultMaxAttempts-1) || !(RetryPolicy{}).Exhausted(DefaultMaxAttempts) {
		t.Fatal("Exhausted disagrees with DefaultMaxAttempts")
	}
	if !(RetryPolicy{MaxAttempts: 1}).Exhausted(1) {
		t.Fatal("MaxAttempts 1 must mean no retries")
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]RetryPolicy{
		"MaxAttempts": {MaxAttempts: -1},
		"MinBackoff":  {MinBackoff: -1},
		"MaxBackoff":  {MaxBackoff: -1},
		"Jitter":      {Jitter: 2},
	}
	for field, p := range cases {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", p, err, field)
		}
	}
	if err := (RetryPolicy{}).Validate(); err != nil {
		t.Errorf("zero policy: %v", err)
	}
}

// A policy with its defaults applied must behave as the policy itself:
// backends apply the defaults once in their options and Backoff applies
// them again.
func TestWithDefaultsIsIdempotent(t *testing.T) {
	cases := map[string]RetryPolicy{
		"zero":      {},
		"no jitter": {Jitter: -1},
		"custom":    {MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: time.Second, Jitter: 0.5},
		"max below": {MinBackoff: time.Minute, MaxBackoff: time.Second},
	}
	for name, p := range cases {
		once := p.WithDefaults()
		if twice := once.WithDefaults(); twice != once {
			t.Errorf("%s: WithDefaults twice = %+v, once = %+v", name, twice, once)
		}
	}
}

func TestNoJitterSurvivesDefaults(t *testing.T) {
	p := RetryPolicy{MinBackoff: time.Second, Jitter: -1}.WithDefaults()
	for i := range 100 {
		if got := p.Backoff(1); got != time.Second {
			t.Fatalf("run %d: Backoff(1) of a no-jitter policy after WithDefaults = %v, want exactly 1s", i, got)
		}
	}
}

// capPolicies are policies whose waits reach MaxBackoff, with jitter.
var capPolicies = map[string]RetryPolicy{
	"defaults":          {},
	"the issue's":       {MinBackoff: time.Second, MaxBackoff: time.Hour, Jitter: 0.1},
	"cap not a power":   {MinBackoff: 3 * time.Second, MaxBackoff: 100 * time.Second, Jitter: 0.25},
	"cap near a power":  {MinBackoff: time.Second, MaxBackoff: 1030 * time.Millisecond, Jitter: 0.5},
	"min is max":        {MinBackoff: time.Minute, MaxBackoff: time.Minute, Jitter: 0.1},
	"max below min":     {MinBackoff: time.Minute, MaxBackoff: time.Second, Jitter: 0.1},
	"full jitter":       {MinBackoff: time.Millisecond, MaxBackoff: time.Second, Jitter: 1},
	"tiny jitter":       {MinBackoff: time.Millisecond, MaxBackoff: time.Second, Jitter: 1e-9},
	"nanoseconds":       {MinBackoff: 1, MaxBackoff: 7, Jitter: 0.9},
	"a century cap":     {MinBackoff: time.Second, MaxBackoff: 100 * 365 * 24 * time.Hour, Jitter: 0.1},
	"the largest cap":   {MinBackoff: time.Second, MaxBackoff: math.MaxInt64, Jitter: 0.1},
	"no jitter, capped": {MinBackoff: time.Second, MaxBackoff: 10 * time.Second, Jitter: -1},
}

// TestBackoffNeverExceedsMaxBackoff is a property over policies, attempts
// and random draws (seeded, plus the extremes of the draw): a wait is never
// over MaxBackoff and never negative, and otherwise stays in its jitter band
// d·(1 ± Jitter), d = MinBackoff·2^(attempt-1) capped at MaxBackoff.
func TestBackoffNeverExceedsMaxBackoff(t *testing.T) {
	for name, p := range capPolicies {
		q := p.WithDefaults()
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			draws := []float64{0, math.Nextafter(1, 0), 0.5}
			for range 20 {
				draws = append(draws, rng.Float64())
			}
			for attempt := -1; attempt <= 100; attempt++ {
				d := base(q, attempt)
				lo, hi := float64(d), float64(d)
				if q.Jitter > 0 {
					lo, hi = float64(d)*(1-q.Jitter), float64(d)*(1+q.Jitter)
				}
				for _, r := range draws {
					got := p.backoff(attempt, r)
					if got < 0 || got > q.MaxBackoff {
						t.Fatalf("%s: backoff(%d, %v) = %v, over MaxBackoff %v (or negative)", name, attempt, r, got, q.MaxBackoff)
					}
					// One nanosecond of slack each side for rounding.
					if float64(got) < lo-1 || float64(got) > hi+1 {
						t.Fatalf("%s: backoff(%d, %v) = %v, outside the jitter band %v…%v of %v", name, attempt, r, got, time.Duration(lo), time.Duration(hi), d)
					}
				}
			}
		}
		// Backoff itself, with the package's random source.
		for attempt := 1; attempt <= 40; attempt++ {
			for range 50 {
				if got := p.Backoff(attempt); got < 0 || got > q.MaxBackoff {
					t.Fatalf("%s: Backoff(%d) = %v, over MaxBackoff %v (or negative)", name, attempt, got, q.MaxBackoff)
				}
			}
		}
	}
}

// base is the wait before jitter, computed by doubling.
func base(p RetryPolicy, attempt int) time.Duration {
	d := p.MinBackoff
	for range max(attempt, 1) - 1 {
		if d > p.MaxBackoff/2 {
			return p.MaxBackoff
		}
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// TestBackoffAtTheCapIsSpread: waits at the cap are cut at MaxBackoff, not
// clamped to it, so messages that fail together still come back spread
// over the band below the cap, not all at MaxBackoff.
func TestBackoffAtTheCapIsSpread(t *testing.T) {
	p := RetryPolicy{MinBackoff: time.Second, MaxBackoff: time.Hour, Jitter: 0.1}
	atCap, seen := 0, map[time.Duration]bool{}
	for range 1000 {
		d := p.Backoff(30)
		if d < 54*time.Minute || d > time.Hour {
			t.Fatalf("Backoff(30) = %v, want within 54m…1h", d)
		}
		if d == time.Hour {
			atCap++
		}
		seen[d] = true
	}
	if atCap > 10 || len(seen) < 900 {
		t.Fatalf("1000 waits at the cap: %d exactly at MaxBackoff, %d distinct; want them spread below it", atCap, len(seen))
	}
}
