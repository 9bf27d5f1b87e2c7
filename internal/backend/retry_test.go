package backend

import (
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// TestFailBackoffIsCapped: the wait every backend schedules after a failed
// delivery is never over the policy's MaxBackoff, jitter included.
func TestFailBackoffIsCapped(t *testing.T) {
	p := pubsub.RetryPolicy{MaxAttempts: 50, MinBackoff: time.Second, MaxBackoff: time.Hour, Jitter: 0.1}
	for attempt := 1; attempt < p.MaxAttempts; attempt++ {
		for range 200 {
			f := Fail(p, attempt, errors.New("boom"))
			if f.Dead || f.Backoff <= 0 || f.Backoff > p.MaxBackoff || f.Reason != "boom" {
				t.Fatalf("Fail(attempt %d) = %+v, want a live failure waiting at most %v", attempt, f, p.MaxBackoff)
			}
		}
	}
	if f := Fail(p, p.MaxAttempts, nil); !f.Dead || f.Backoff != 0 {
		t.Fatalf("Fail(last attempt) = %+v, want dead", f)
	}
}
