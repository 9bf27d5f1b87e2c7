package relay

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Defaults of Options.
const (
	// DefaultWorkers is how many messages a Relay has in hand at once.
	DefaultWorkers = 8
	// DefaultTimeout bounds the publish and the settle of one message.
	DefaultTimeout = 15 * time.Second
	// DefaultBackoff is the Relay's first pause after a publish failed
	// because the destination is unavailable; each further failure in a
	// row doubles it, up to DefaultMaxBackoff.
	DefaultBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the Relay's pause while the destination is
	// unavailable.
	DefaultMaxBackoff = 30 * time.Second
	// MaxSourceLen is the longest Options.Source accepted, in bytes: a
	// key (see Key) stays within pubsub.MaxKeyLen for message IDs of up
	// to about 490 bytes.
	MaxSourceLen = 500
)

// retryMax caps a worker's pause after a failing Dequeue.
const retryMax = 5 * time.Second

// Options configures a Relay. The zero value means the defaults.
type Options struct {
	// Workers is how many messages the Relay moves at once, each in its
	// own goroutine. With one worker the destination gets the source's
	// messages in the order the source hands them out (a retried message
	// comes later). 0 means DefaultWorkers.
	Workers int
	// Source names the source in the keys the Relay publishes with (see
	// Key): the destination keeps one message per key, so two relays
	// into one destination need different sources. "" means the source
	// handle's topic and subscription, "topic/subscription", found
	// through wrappers on any handle with Name() and Subscription()
	// methods (the handles of dbpubsub and natspubsub); a source without them
	// needs Source set. A message ID is unique in its store (a dbpubsub
	// table), not across stores: set Source when relays from different
	// databases, schemas or tables feed one destination. 1 to
	// MaxSourceLen bytes of UTF-8 without NUL.
	Source string
	// Timeout bounds each step of one message: its publish to the
	// destination, then its Ack (or Fail, or Reject) on the source. The
	// steps run on a context of their own, so that a Relay whose Run ctx
	// ends still finishes the messages in hand. Keep it below the
	// source's lease, or a slow publish makes the message come back
	// meanwhile (harmless: its second publish is a duplicate). 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Permanent reports whether an error of the destination means the
	// message can never be published, so that it is made dead at once in
	// the source (pubsub.Reject) instead of retried. Errors wrapping
	// pubsub.ErrTooLarge or pubsub.ErrInvalidKey are always permanent;
	// nil means no other is.
	Permanent func(error) bool
	// Backoff is the Relay's pause after a publish failed for a reason
	// other than the message itself (the destination is down, slow or
	// refuses every message for now): every worker waits before its next
	// publish, and each failure after a pause doubles it, up to
	// MaxBackoff; a publish that succeeds ends the pause. 0 means
	// DefaultBackoff.
	Backoff time.Duration
	// MaxBackoff caps the pause. 0 means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// OnFailure, when set, is handed each failure no caller is returned
	// (see pubsub.Failure): a failed publish (pubsub.PublishFailed), a
	// message made dead in the source (pubsub.Dead, Cause
	// pubsub.Rejected), a failed Dequeue (pubsub.FetchRetried). It runs
	// in a goroutine of its own (see pubsub.Failure for what happens when
	// it is slow); Run returns once it has had the failures of that Run.
	// nil means each is logged on Logger.
	OnFailure func(pubsub.Failure)
	// Logger receives the Relay's logs: each message made dead, each
	// failed publish, settle or Dequeue (those without OnFailure). nil
	// means slog.Default().
	Logger *slog.Logger
}

// named is a topic handle that says which topic and subscription it reads.
type named interface {
	Name() string
	Subscription() string
}

// withDefaults returns o with its defaults applied, or an error naming the
// first bad field. from is the source, whose names are the default Source.
func (o Options) withDefaults(from pubsub.Topic) (Options, error) {
	fail := func(field string, v any, want string) (Options, error) {
		return o, fmt.Errorf("%w: Options.%s is %v, want %s", ErrInvalidOptions, field, v, want)
	}
	switch {
	case o.Workers < 0:
		return fail("Workers", o.Workers, "0 (default) or more")
	case o.Timeout < 0:
		return fail("Timeout", o.Timeout, "0 (default) or more")
	case o.Backoff < 0:
		return fail("Backoff", o.Backoff, "0 (default) or more")
	case o.MaxBackoff < 0:
		return fail("MaxBackoff", o.MaxBackoff, "0 (default) or more")
	}
	if o.Source == "" {
		n, ok := pubsub.As[named](from)
		if !ok {
			return o, fmt.Errorf("%w: Options.Source is empty and the source (%T) does not name its topic: set Source", ErrInvalidOptions, from)
		}
		o.Source = n.Name() + "/" + n.Subscription()
	}
	switch {
	case len(o.Source) > MaxSourceLen:
		return fail("Source", fmt.Sprintf("%d bytes", len(o.Source)), fmt.Sprintf("at most %d", MaxSourceLen))
	case !utf8.ValidString(o.Source) || strings.ContainsRune(o.Source, 0):
		return fail("Source", fmt.Sprintf("%q", o.Source), "UTF-8 without NUL")
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.Backoff {
		return fail("MaxBackoff", o.MaxBackoff, fmt.Sprintf("0 (default) or at least Backoff (%v)", o.Backoff))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
