package event

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of them (or an
// error of package pubsub or di) with context: match them with errors.Is.
var (
	// ErrInvalidEvent is returned by Encode and the Dispatcher for an event
	// that cannot be sent: nil, an empty or malformed type, data that does
	// not marshal to JSON, or a source that is not a URI-reference; and by
	// Envelope.MarshalJSON and Envelope.Validate for an envelope that is
	// not a valid CloudEvent.
	ErrInvalidEvent = errors.New("event: invalid event")
	// ErrMalformed means that a message is not an event this package can
	// read: not a CloudEvents 1.0 JSON envelope (Decode), or data that does
	// not unmarshal into a listener's event type. A Service rejects such a
	// message at once, keeping the reason.
	ErrMalformed = errors.New("event: malformed event")
	// ErrUnknownType means that a Service has no listener for an event's
	// type. The Service rejects the message at once, keeping the reason.
	ErrUnknownType = errors.New("event: no listener for event type")
	// ErrPermanent marks a listener's error as one that retrying cannot
	// fix; see Permanent.
	ErrPermanent = errors.New("event: permanent failure")
	// ErrPanic is wrapped by the error a Service reports for a listener (or
	// middleware) that panicked.
	ErrPanic = errors.New("event: listener panicked")
	// ErrInvalidListener is returned by Listen, ListenFunc and Start for a
	// listener that cannot be registered.
	ErrInvalidListener = errors.New("event: invalid listener")
	// ErrStarted is returned when a Service or Scheduler is started twice,
	// or changed after it started.
	ErrStarted = errors.New("event: already started")
	// ErrInvalidSchedule is returned for a schedule that makes no sense (a
	// cron expression that does not parse, a non-positive interval).
	ErrInvalidSchedule = errors.New("event: invalid schedule")
	// ErrDuplicateService is returned by Start for a second Service on the
	// same topic and subscription of one injector. It also wraps
	// di.ErrAlreadyRegistered.
	ErrDuplicateService = errors.New("event: a service already consumes this topic and subscription")
	// ErrOutsideListener is returned by Claim when its ctx is not the one
	// a Service passed to a running listener.
	ErrOutsideListener = errors.New("event: Claim outside a listener")
)

// Permanent marks err as permanent: when a listener returns it (or an error
// wrapping it), the Service makes the message dead at once (pubsub.Reject)
// instead of retrying it. Use it for events that can never be handled, such
// as an order that does not exist. Permanent(nil) is nil. The result wraps
// both err and ErrPermanent.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err is, or wraps, an error marked Permanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// malformed wraps ErrMalformed with a reason.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
