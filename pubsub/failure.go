package pubsub

import (
	"fmt"
	"time"
)

// FailureKind says what failed in a Failure.
type FailureKind string

// The kinds of Failure.
const (
	// FetchRetried: a consumer's fetch (a backend's claim or pull, a
	// Service's or a relay's Dequeue) failed and is tried again. No
	// message is involved: MessageID is empty.
	FetchRetried FailureKind = "fetch_retried"
	// PublishFailed: a relay's publish of a message to its destination
	// failed; the relay keeps the message and tries again (see package
	// relay).
	PublishFailed FailureKind = "publish_failed"
	// Dead: a message went dead; Failure.Cause says why.
	Dead FailureKind = "dead"
)

// DeadCause says why a message went dead.
type DeadCause string

// The causes of a Dead Failure.
const (
	// AttemptsExhausted: its last attempt failed (Nack, Fail).
	AttemptsExhausted DeadCause = "attempts_exhausted"
	// Rejected: it was rejected (Reject), dead at once.
	Rejected DeadCause = "rejected"
	// LeaseExpired: the lease of its last attempt ran out unsettled.
	LeaseExpired DeadCause = "lease_expired"
)

// FailureQueueLen is how many Failures a hook may be behind before the
// next ones are dropped (and counted in Failure.Dropped): the hook runs
// in a goroutine of its own, never in the one that reports the failure.
const FailureQueueLen = 256

// Failure is a failure nobody returns to a caller: a fetch retried in the
// background, a relay's publish that failed, a message that went dead. A
// backend (channelpubsub, dbpubsub, natspubsub Options.OnFailure), a relay
// (relay.Options.OnFailure) and an event.Service
// (event.ServiceOptions.OnFailure) each hand theirs to one hook, the
// OnFailure of their options; without one they log it, as they always
// have.
//
// The hook is called in a goroutine of its own, one at a time, in the
// order the failures happened, with at most FailureQueueLen of them
// waiting: a hook that blocks delays only the hook's later calls, never a
// delivery, and when FailureQueueLen are waiting the next failures are
// dropped, and counted in the Dropped of the next one the hook gets.
// Closing what reports (the PubSub, the Service; a relay's Run returning)
// waits for the hook to have been called with what is waiting, so a hook
// that never returns keeps Close waiting.
type Failure struct {
	Kind         FailureKind
	Cause        DeadCause // for Kind Dead: why
	Topic        string
	Subscription string
	MessageID    string    // "" for FetchRetried
	Attempt      int       // the message's delivery number (1 for the first); 0 if none or unknown
	Err          error     // what failed; for Dead, the reason kept with the message (nil if none)
	Time         time.Time // when it happened
	// Dropped counts the failures dropped just before this one because
	// FailureQueueLen were waiting for the hook.
	Dropped int64
}

// String describes f in one line.
func (f Failure) String() string {
	s := string(f.Kind)
	if f.Cause != "" {
		s += " (" + string(f.Cause) + ")"
	}
	s += fmt.Sprintf(" topic=%q subscription=%q", f.Topic, f.Subscription)
	if f.MessageID != "" {
		s += fmt.Sprintf(" message_id=%q attempt=%d", f.MessageID, f.Attempt)
	}
	if f.Err != nil {
		s += " error=" + f.Err.Error()
	}
	return s
}
