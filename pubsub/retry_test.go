package pubsub

import (
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
