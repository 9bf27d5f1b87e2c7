package backend

import (
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// ReasonLeaseExpired is the last error kept with a message made dead
// because its last lease ran out.
const ReasonLeaseExpired = "lease expired"

// ReasonRejected is the last error kept with a message rejected without a
// reason.
const ReasonRejected = "rejected"

// Failure is what the retry policy makes of a failed delivery.
type Failure struct {
	Dead    bool          // the attempts are exhausted: the message is dead
	Backoff time.Duration // else: the wait before its next delivery
	Reason  string        // the reason to keep ("" keeps the last one)
}

// Fail is the outcome of delivery number attempt (1 for the first) failing
// with reason (nil: none given) under p.
func Fail(p pubsub.RetryPolicy, attempt int, reason error) Failure {
	f := Failure{}
	if reason != nil {
		f.Reason = reason.Error()
	}
	if p.Exhausted(attempt) {
		f.Dead = true
		return f
	}
	f.Backoff = p.Backoff(attempt)
	return f
}

// RejectReason is the reason kept with a message rejected with reason.
func RejectReason(reason error) string {
	if reason == nil {
		return ReasonRejected
	}
	return reason.Error()
}
