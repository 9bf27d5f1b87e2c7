package logstore

import (
	"encoding/json"
	"iter"
	"slices"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// A subscription on a log store is a named group that gets what is
// appended to the topic's log after it was made. package pubsub's rules
// on the default subscription map onto that the same way on every store:
//
//   - A publish to a topic without subscriptions first makes the default
//     one in reserve: it keeps a plain queue's messages, but is not listed
//     (Names), since nobody consumed the default yet.
//   - Consuming the default, or subscribing to its name, declares it
//     (Declare): the reserve becomes a listed subscription, keeping what
//     it holds.
//   - A named subscription made while the default is a reserve notes, in
//     the reserve, where the log ended then (NoteUntil): what follows was
//     published for the named ones, so the default, once declared, skips
//     it up to where the log ended at its declaration (Skips).
//   - Deleting a topic's last subscription leaves a reserve of the
//     default, so later publishes are kept for it.

// A Position is a place in a store's log, P, such as where the log ended
// at some time (a JetStream stream's last sequence; the end offset of
// each of a Kafka topic's partitions); its zero value is none. R is a
// record's place in the log.
type Position[P, R any] interface {
	// IsSet reports whether the position is one, not the zero value.
	IsSet() bool
	// Next is the place of the first record appended after the log
	// ended at the position.
	Next() P
	// Holds reports whether the record at r, a Next or past it, was in
	// the log when it ended at end.
	Holds(end P, r R) bool
}

// Subscription is what a log store keeps of a subscription, as JSON (a
// JetStream consumer's description, a Kafka registry record); a store
// that keeps more embeds it in a struct of its own.
type Subscription[P Position[P, R], R any] struct {
	Sub string `json:"subscription"`
	// Reserve: the default subscription kept before it is declared, or
	// one made to be declared later; not listed.
	Reserve bool `json:"reserve,omitempty"`
	// Until: the reserve's messages end where the log ended here (none:
	// no named subscription was made while it was a reserve).
	Until P `json:"until,omitempty"`
	// SkipFrom to SkipTo: the records that are not the declared
	// default's, published for named subscriptions while it was a
	// reserve (Skips).
	SkipFrom P `json:"skip_from,omitempty"`
	SkipTo   P `json:"skip_to,omitempty"`
	// Retry is the retry policy the subscription was made with
	// (driver.Subscriptions.Subscribe); nil for one made without, which
	// delivers with each PubSub's own.
	Retry *pubsub.RetryPolicy `json:"retry,omitempty"`
}

// Declare returns d declared with retry policy retry: a reserve becomes a
// listed subscription, and one with an Until skips from after it to
// end(), where the log ends now. A listed d is returned as it is; end is
// called only when needed.
func (d Subscription[P, R]) Declare(retry *pubsub.RetryPolicy, end func() (P, error)) (Subscription[P, R], error) {
	if !d.Reserve {
		return d, nil
	}
	declared := Subscription[P, R]{Sub: d.Sub, Retry: retry}
	if d.Until.IsSet() {
		to, err := end()
		if err != nil {
			return d, err
		}
		declared.SkipFrom, declared.SkipTo = d.Until.Next(), to
	}
	return declared, nil
}

// NoteUntil returns the default's reserve d with its Until set to end(),
// where the log ends now, once a named subscription was made: what is
// published from then on is the named ones'. Only the first end is kept:
// noted is false, and end not called, when d is not a reserve or has an
// Until.
func (d Subscription[P, R]) NoteUntil(end func() (P, error)) (_ Subscription[P, R], noted bool, err error) {
	if !d.Reserve || d.Until.IsSet() {
		return d, false, nil
	}
	if d.Until, err = end(); err != nil {
		return d, false, err
	}
	return d, true, nil
}

// OwnRetry is the retry policy a subscription made with cfg keeps: cfg's
// when it is its own, else none.
func OwnRetry(cfg driver.SubscriptionConfig) *pubsub.RetryPolicy {
	if cfg.Own {
		return &cfg.Retry
	}
	return nil
}

// Config is the subscription's configuration: defaults, with its own
// retry policy when it has one.
func (d Subscription[P, R]) Config(defaults driver.SubscriptionConfig) driver.SubscriptionConfig {
	if d.Retry != nil {
		defaults.Retry, defaults.Own = *d.Retry, true
	}
	return defaults
}

// Skips reports whether the record at r is not the subscription's: it was
// published for named subscriptions while the default was a reserve.
func (d Subscription[P, R]) Skips(r R) bool {
	return d.SkipFrom.IsSet() && d.SkipFrom.Holds(d.SkipTo, r)
}

// A Description is what a store keeps of a subscription: a Subscription,
// or a struct of the store's that embeds one.
type Description interface {
	entry() (sub string, listed bool)
}

func (d Subscription[P, R]) entry() (string, bool) { return d.Sub, !d.Reserve }

// Parse reads a description from its JSON; ok is false for one conveyor
// did not make.
func Parse[D Description](b []byte) (d D, ok bool) {
	if json.Unmarshal(b, &d) != nil {
		return *new(D), false
	}
	if sub, _ := d.entry(); sub == "" {
		return *new(D), false
	}
	return d, true
}

// Names returns the names of the subscriptions of ds that are listed (not
// reserves), sorted.
func Names[D Description](ds iter.Seq[D]) []string {
	names := []string{}
	for d := range ds {
		if sub, listed := d.entry(); listed {
			names = append(names, sub)
		}
	}
	slices.Sort(names)
	return names
}
