package logstore

import (
	"context"
	"strconv"
	"time"
)

// A delayed message waits in its topic's delay log until it is due: then
// it is published to the topic like any message, for every subscription
// the topic has at that time, and settled in the delay log. Every process
// that consumes the topic or delays a message on it runs a mover
// (RunMover) sharing one group of the delay log: a record not due yet is
// given back for the time it still has to wait, so it is fetched again
// when due.

// DelayFields calls set with the headers of a message delayed until at
// and enqueued at now.
func DelayFields(set func(k, v string), at, now time.Time) {
	set(HeaderDue, strconv.FormatInt(at.UnixNano(), 10))
	set(HeaderEnqueued, strconv.FormatInt(now.UnixNano(), 10))
}

// DueIn returns how long the delayed record whose headers get reads
// still waits, 0 or less when it is due; a record without HeaderDue (not
// delayed by conveyor) is due.
func DueIn(get func(k string) string, now time.Time) time.Duration {
	at, err := strconv.ParseInt(get(HeaderDue), 10, 64)
	if err != nil {
		return 0
	}
	return time.Unix(0, at).Sub(now)
}

// EnqueuedBefore reports whether the record whose headers get reads is a
// delayed message enqueued before t (a subscription made at t gets only
// what was enqueued after it, whenever it is due).
func EnqueuedBefore(get func(k string) string, t time.Time) bool {
	enqueued, err := strconv.ParseInt(get(HeaderEnqueued), 10, 64)
	return err == nil && t.UnixNano() > enqueued
}

// Delayed is one record of a delay log, fetched by the mover's group.
type Delayed interface {
	// Get returns the record's header key, "" if it has none.
	Get(key string) string
	// Later gives the record back to the delay log, to be fetched again
	// after wait.
	Later(wait time.Duration) error
	// Publish publishes the record's message to its topic, once however
	// often it is called for one record where the store can de-duplicate.
	Publish(ctx context.Context) error
	// Done settles the record in the delay log for good.
	Done(ctx context.Context) error
}

// Move publishes r if it is due, then settles it; if not due, it gives r
// back for the time it still waits.
func Move(ctx context.Context, r Delayed) error {
	if wait := DueIn(r.Get, time.Now()); wait > 0 {
		return r.Later(wait)
	}
	if err := r.Publish(ctx); err != nil {
		return err
	}
	return r.Done(ctx)
}

// RunMover calls once, one round of a mover (a fetch of the delay log and
// Move of what it brought), until ctx ends. After a failed round it waits
// wait(err), and calls failed(err) for each failure until one for which
// it reports true (it logged it, say), then not again until a round
// succeeds: a server out of reach is tried again, logged once.
func RunMover(ctx context.Context, once func(context.Context) error, wait func(error) time.Duration, failed func(error) bool) {
	var logged bool
	for ctx.Err() == nil {
		err := once(ctx)
		if err == nil || ctx.Err() != nil {
			logged = false
			continue
		}
		if !logged {
			logged = failed(err)
		}
		select {
		case <-time.After(wait(err)):
		case <-ctx.Done():
		}
	}
}
