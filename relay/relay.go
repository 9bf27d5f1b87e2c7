package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Relay moves the messages of a source topic to a destination topic, each
// published under a key of its own (see Key) before it is acked. Make one
// with New and run it with Run.
type Relay struct {
	from    pubsub.Topic
	to      pubsub.UniqueEnqueuer // the destination's, found once by New
	opts    Options
	log     *slog.Logger
	running atomic.Bool

	relayed, duplicates, rejected, failed atomic.Int64
}

// Stats counts what a Relay did with the messages it took from its source,
// since New.
type Stats struct {
	// Relayed counts the messages the destination added.
	Relayed int64
	// Duplicates counts the messages the destination already kept under
	// their key: published before, and redelivered by the source because
	// its Ack was lost (a crash, an expired lease).
	Duplicates int64
	// Rejected counts the messages made dead in the source because the
	// destination can never take them.
	Rejected int64
	// Failed counts the publishes that failed and were given back to the
	// source to be retried after its backoff.
	Failed int64
}

// New returns a Relay from the topic handle from (the subscription it
// reads is the one relayed) to the topic to. The Relay uses both handles
// and closes neither. to must offer pubsub.UniqueEnqueuer, found through
// wrappers: otherwise New returns an error wrapping pubsub.ErrUnsupported.
// A bad option is an error wrapping ErrInvalidOptions, naming it.
func New(from, to pubsub.Topic, opts Options) (*Relay, error) {
	if from == nil || to == nil {
		return nil, fmt.Errorf("%w: relay.New needs a source and a destination topic, got %T and %T", ErrInvalidOptions, from, to)
	}
	u, ok := pubsub.As[pubsub.UniqueEnqueuer](to)
	if !ok {
		return nil, fmt.Errorf("relay: the destination (%T) cannot enqueue under a key, which relaying once needs: %w", to, pubsub.ErrUnsupported)
	}
	o, err := opts.withDefaults(from)
	if err != nil {
		return nil, err
	}
	return &Relay{from: from, to: u, opts: o, log: o.Logger.With(slog.String("relay", o.Source))}, nil
}

// Key is the key a Relay with Options.Source source publishes the message
// id of its source under: the length of source, source and id, separated
// by colons, so that different sources never make one key.
func Key(source, id string) string {
	return strconv.Itoa(len(source)) + ":" + source + ":" + id
}

// Stats returns what r did so far.
func (r *Relay) Stats() Stats {
	return Stats{
		Relayed:    r.relayed.Load(),
		Duplicates: r.duplicates.Load(),
		Rejected:   r.rejected.Load(),
		Failed:     r.failed.Load(),
	}
}

// Run relays until ctx ends, then finishes the messages in hand (see
// Options.Timeout) and returns nil. It returns early, with the
// error, when the Relay cannot go on: the source or the destination is
// closed (pubsub.ErrClosed), or the destination refuses every message (an
// invalid topic, an unsupported call); the message in hand is then given
// back to the source. A Dequeue that fails otherwise (the store cannot be
// reached) is retried, logging. Calling Run while another Run of r has
// not returned is an error wrapping ErrRunning.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("relay %q: Run: %w", r.opts.Source, ErrRunning)
	}
	defer r.running.Store(false)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		fatal error
	)
	for range r.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.work(wctx); err != nil {
				once.Do(func() { fatal = err })
				stop()
			}
		}()
	}
	wg.Wait()
	return fatal
}

// work moves messages one at a time until ctx ends (nil) or the Relay
// cannot go on (the error).
func (r *Relay) work(ctx context.Context) error {
	var wait time.Duration
	for {
		m, err := r.from.Dequeue(ctx)
		var fe fatalError
		switch {
		case err == nil:
			err = r.move(ctx, m) // even when ctx just ended
			if errors.As(err, &fe) {
				return fe.err
			}
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, pubsub.ErrClosed): // the source's
			return fmt.Errorf("relay %q: source: %w", r.opts.Source, err)
		default:
			r.log.Warn("relay: dequeue failed; retrying", slog.Any("error", err))
		}
		if err == nil {
			wait = 0
			continue
		}
		// Pause after a failure, so that a store or a destination that is
		// down does not take the attempts of every message at once.
		wait = min(max(2*wait, 10*time.Millisecond), retryMax)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}

// fatalError is a destination error after which the Relay stops.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }

// move publishes m, with its header, to the destination and settles it in
// the source. It returns nil when m is settled for good (relayed, a
// duplicate, or dead), a fatalError when the Relay must stop, or the error
// of a publish that may succeed later (m was given back to the source).
func (r *Relay) move(ctx context.Context, m pubsub.Message) error {
	// The message in hand is finished even when ctx ends meanwhile: its
	// publish, then its settle, each within Options.Timeout.
	ctx = context.WithoutCancel(ctx)
	pctx, cancel := context.WithTimeout(pubsub.WithHeader(ctx, pubsub.MessageHeader(m)), r.opts.Timeout)
	added, err := r.to.EnqueueUnique(pctx, Key(r.opts.Source, m.ID()), m.Data())
	cancel()
	switch {
	case err == nil:
		if added {
			r.relayed.Add(1)
		} else {
			r.duplicates.Add(1)
		}
		r.settle(ctx, m, nil, false)
		return nil
	case r.permanent(err):
		r.rejected.Add(1)
		r.log.Error("relay: the destination can never take the message; it is dead in the source",
			slog.String("message_id", m.ID()), slog.Any("error", err))
		r.settle(ctx, m, err, true)
		return nil
	case errors.Is(err, pubsub.ErrClosed), errors.Is(err, pubsub.ErrInvalidTopic), errors.Is(err, pubsub.ErrUnsupported):
		r.failed.Add(1)
		r.settle(ctx, m, err, false)
		return fatalError{fmt.Errorf("relay %q: destination: %w", r.opts.Source, err)}
	default:
		r.failed.Add(1)
		r.log.Warn("relay: publish failed; the source retries the message after its backoff",
			slog.String("message_id", m.ID()), slog.Int("attempt", pubsub.Attempt(m)), slog.Any("error", err))
		r.settle(ctx, m, err, false)
		return err
	}
}

// permanent reports whether the destination's err means m can never be
// published.
func (r *Relay) permanent(err error) bool {
	return errors.Is(err, pubsub.ErrTooLarge) || errors.Is(err, pubsub.ErrInvalidKey) || errors.Is(err, pubsub.ErrInvalidHeader) ||
		r.opts.Permanent != nil && r.opts.Permanent(err)
}

// settle acks m when reason is nil; else it gives m back to the source
// with the reason it was not published (pubsub.Fail), or makes it dead
// with it (pubsub.Reject, or Fail where the source cannot reject: m then
// dies when its attempts run out). A settle that fails leaves m to come
// back when its lease runs out, and be published again: a duplicate if
// it was published.
func (r *Relay) settle(ctx context.Context, m pubsub.Message, reason error, dead bool) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var err error
	switch {
	case reason == nil:
		err = m.Ack(ctx)
	case dead:
		err = pubsub.Reject(ctx, m, reason)
		if errors.Is(err, pubsub.ErrUnsupported) {
			err = pubsub.Fail(ctx, m, reason)
		}
	default:
		err = pubsub.Fail(ctx, m, reason)
	}
	if err != nil {
		r.log.Warn("relay: settle failed; the message comes back after its lease",
			slog.String("message_id", m.ID()), slog.Bool("published", reason == nil), slog.Any("error", err))
	}
}
