package pubsub

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of RetryPolicy and of the lease every backend gives a delivery.
const (
	// DefaultMaxAttempts is how many deliveries a message gets before it is dead.
	DefaultMaxAttempts = 20
	// DefaultMinBackoff is the wait after the first failed delivery.
	DefaultMinBackoff = time.Second
	// DefaultMaxBackoff caps the wait between two deliveries, jitter
	// included.
	DefaultMaxBackoff = time.Hour
	// DefaultJitter spreads each backoff by up to ±10 % so that messages
	// failed together are not retried together.
	DefaultJitter = 0.1
	// DefaultLease is how long a delivery may stay unsettled before the
	// message is handed out again.
	DefaultLease = 30 * time.Second
)

// RetryPolicy says when a nacked message is delivered again, and when it is
// dead instead. Every backend uses it, so swapping backends does not change
// retry behaviour. The zero value means the defaults: 20 attempts, waits of
// 1 s, 2 s, 4 s … up to 1 h, each spread by ±10 % but never over 1 h; in
// all a message that always fails is retried for about eight hours.
type RetryPolicy struct {
	// MaxAttempts is the number of deliveries after which a failed message
	// is dead. 0 means DefaultMaxAttempts; 1 means no retries.
	MaxAttempts int
	// MinBackoff is the wait after the first failed delivery; each further
	// failure doubles it. 0 means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait, jitter included: no wait is longer. 0 means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Jitter is the fraction (0 to 1) by which each wait is spread at
	// random. 0 means DefaultJitter; a negative value means no jitter.
	Jitter float64
}

// WithDefaults returns p with its zero fields set to the defaults. It is
// idempotent: a negative Jitter (no jitter) stays negative, so applying the
// defaults again never turns jitter back on.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MinBackoff == 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultJitter
	}
	if p.Jitter < 0 {
		p.Jitter = -1
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = p.MinBackoff
	}
	return p
}

// Validate reports the first field of p that makes no sense, by name.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 0:
		return fmt.Errorf("pubsub: RetryPolicy.MaxAttempts is %d, want 0 (default) or more", p.MaxAttempts)
	case p.MinBackoff < 0:
		return fmt.Errorf("pubsub: RetryPolicy.MinBackoff is %v, want 0 (default) or more", p.MinBackoff)
	case p.MaxBackoff < 0:
		return fmt.Errorf("pubsub: RetryPolicy.MaxBackoff is %v, want 0 (default) or more", p.MaxBackoff)
	case p.Jitter > 1:
		return fmt.Errorf("pubsub: RetryPolicy.Jitter is %v, want at most 1", p.Jitter)
	case math.IsNaN(p.Jitter):
		return fmt.Errorf("pubsub: RetryPolicy.Jitter is NaN")
	}
	return nil
}

// Exhausted reports whether a message whose delivery number attempt (1 for
// the first delivery) failed is dead rather than retried.
func (p RetryPolicy) Exhausted(attempt int) bool {
	return attempt >= p.WithDefaults().MaxAttempts
}

// Backoff is the wait before the next delivery of a message whose delivery
// number attempt (1 for the first) failed: d = MinBackoff·2^(attempt-1),
// capped at MaxBackoff, then spread by Jitter at random over d·(1 ± Jitter)
// with the part above MaxBackoff cut off. MaxBackoff is thus a hard cap,
// and waits at the cap are spread below it rather than piled on it.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	return p.backoff(attempt, rand.Float64())
}

// backoff is Backoff with r, in [0, 1), as the random draw.
func (p RetryPolicy) backoff(attempt int, r float64) time.Duration {
	p = p.WithDefaults()
	if attempt < 1 {
		attempt = 1
	}
	d := p.MaxBackoff
	if attempt-1 < 62 {
		if f := float64(p.MinBackoff) * math.Exp2(float64(attempt-1)); f < float64(p.MaxBackoff) {
			d = time.Duration(f)
		}
	}
	if p.Jitter > 0 {
		lo := float64(d) * (1 - p.Jitter)
		hi := min(float64(d)*(1+p.Jitter), float64(p.MaxBackoff))
		if j := time.Duration(lo + (hi-lo)*r); j >= 0 && j <= p.MaxBackoff {
			d = j
		} else { // rounding at the cap, or a cap beyond what float64 holds exactly
			d = p.MaxBackoff
		}
	}
	return d
}
