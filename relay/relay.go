package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/failhook"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Relay moves the messages of a source topic to a destination topic, each
// published with its identity, under a key of its own (see Key) where the
// destination takes one, before it is acked. Make one with New and run it
// with Run.
type Relay struct {
	from    pubsub.Topic
	to      pubsub.Topic
	unique  pubsub.UniqueEnqueuer // the destination's, found once by New; nil if it has none
	opts    Options
	log     *slog.Logger
	running atomic.Bool
	names   named // the source's names, nil if it has none
	pause   pause
	fails   *failhook.Reporter // the Run's

	relayed, duplicates, rejected, failed atomic.Int64
}

// Stats counts what a Relay did with the messages it took from its source,
// since New.
type Stats struct {
	// Relayed counts the messages the destination added.
	Relayed int64
	// Duplicates counts the messages the destination already kept under
	// their key: published before, and redelivered by the source because
	// its Ack was lost (a crash, an expired lease). A destination without
	// pubsub.UniqueEnqueuer adds them again: they count as Relayed.
	Duplicates int64
	// Rejected counts the messages made dead in the source because the
	// destination can never take them.
	Rejected int64
	// Failed counts the publishes that failed for a reason other than
	// the message itself, each tried again after the Relay's pause.
	Failed int64
}

// New returns a Relay from the topic handle from (the subscription it
// reads is the one relayed) to the topic to. The Relay uses both handles
// and closes neither. When to offers pubsub.UniqueEnqueuer (found through
// wrappers) each message is published under its key, once; otherwise
// (kafkapubsub) with a plain Enqueue: a message published again after a
// lost Ack is a second copy, with the same identity (see Unique). A bad
// option is an error wrapping ErrInvalidOptions, naming it.
func New(from, to pubsub.Topic, opts Options) (*Relay, error) {
	if from == nil || to == nil {
		return nil, fmt.Errorf("%w: relay.New needs a source and a destination topic, got %T and %T", ErrInvalidOptions, from, to)
	}
	u, _ := pubsub.As[pubsub.UniqueEnqueuer](to)
	o, err := opts.withDefaults(from)
	if err != nil {
		return nil, err
	}
	r := &Relay{from: from, to: to, unique: u, opts: o, log: o.Logger.With(slog.String("relay", o.Source))}
	r.names, _ = pubsub.As[named](from)
	return r, nil
}

// Key is the key a Relay with Options.Source source publishes a message
// of identity id (pubsub.Identity) under: the length of source, source and
// id, separated by colons, so that different sources never make one key.
func Key(source, id string) string {
	return strconv.Itoa(len(source)) + ":" + source + ":" + id
}

// Unique reports whether r's destination keeps one message per key
// (pubsub.UniqueEnqueuer): then a message the source hands out again is
// not added twice while the destination remembers its key. Otherwise
// every publish adds a copy, and only the consumers' inbox (a claim of
// the identity every copy carries, pubsub.Identity) makes the effects
// once.
func (r *Relay) Unique() bool { return r.unique != nil }

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
// reached) is retried and reported (pubsub.FetchRetried). Calling Run while another Run of r has
// not returned is an error wrapping ErrRunning.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("relay %q: Run: %w", r.opts.Source, ErrRunning)
	}
	defer r.running.Store(false)
	r.fails = failhook.New(r.opts.OnFailure)
	defer r.fails.Close()
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
			r.report(pubsub.Failure{Kind: pubsub.FetchRetried, Err: err}, func() {
				r.log.Warn("relay: dequeue failed; retrying", slog.Any("error", err))
			})
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
// duplicate, or dead) or left to the source, a fatalError when the Relay
// must stop, or the error of a publish that may succeed later after m was
// given back to the source.
//
// A publish that fails for a reason other than m itself does not count
// as m's attempt: move keeps m, extending its lease, and publishes it
// again after the Relay's pause, until it succeeds, m is refused for its
// own sake, or runCtx ends (then m is given back with pubsub.Fail).
func (r *Relay) move(runCtx context.Context, m pubsub.Message) error {
	// The message in hand is finished even when runCtx ends meanwhile: its
	// publish, then its settle, each within Options.Timeout.
	ctx := context.WithoutCancel(runCtx)
	id := pubsub.Identity(m)
	h := pubsub.MessageHeader(m)
	if h[pubsub.HeaderMessageID] != id {
		h = maps.Clone(h)
		if h == nil {
			h = pubsub.Header{}
		}
		h[pubsub.HeaderMessageID] = id
	}
	hctx := pubsub.WithHeader(ctx, h)
	var last error // the last publish's error
	for {
		if d := r.pause.left(); d > 0 {
			if last != nil || runCtx.Err() == nil {
				if !r.hold(ctx, m, d) {
					return last
				}
				if !sleep(runCtx, d) && last != nil {
					// Stopping during an outage: the source has m back,
					// after its backoff, one attempt counted.
					r.settle(ctx, m, last, false)
					return nil
				}
			}
		}
		pctx, cancel := context.WithTimeout(hctx, r.opts.Timeout)
		added, err := r.publish(pctx, id, m.Data())
		cancel()
		switch {
		case err == nil:
			r.pause.reset()
			if added {
				r.relayed.Add(1)
			} else {
				r.duplicates.Add(1)
			}
			r.settle(ctx, m, nil, false)
			return nil
		case r.permanent(err):
			r.rejected.Add(1)
			r.report(r.failure(pubsub.Dead, m, err, pubsub.Rejected), func() {
				r.log.Error("relay: the destination can never take the message; it is dead in the source",
					slog.String("message_id", m.ID()), slog.Any("error", err))
			})
			r.settle(ctx, m, err, true)
			return nil
		case errors.Is(err, pubsub.ErrClosed), errors.Is(err, pubsub.ErrInvalidTopic), errors.Is(err, pubsub.ErrUnsupported):
			r.failed.Add(1)
			r.settle(ctx, m, err, false)
			return fatalError{fmt.Errorf("relay %q: destination: %w", r.opts.Source, err)}
		default:
			r.failed.Add(1)
			last = err
			d := r.pause.failed(r.opts.Backoff, r.opts.MaxBackoff)
			r.report(r.failure(pubsub.PublishFailed, m, err, ""), func() {
				r.log.Warn("relay: publish failed; the relay pauses and publishes the message again",
					slog.String("message_id", m.ID()), slog.Int("attempt", pubsub.Attempt(m)),
					slog.Duration("wait", d), slog.Any("error", err))
			})
		}
	}
}

// publish publishes data, of identity id, to the destination: under its
// key where the destination takes one, reporting whether it added it;
// else with a plain Enqueue, which adds it, returning once the
// destination has it (kafkapubsub: the cluster acknowledged the record,
// acks=all).
func (r *Relay) publish(ctx context.Context, id string, data []byte) (added bool, err error) {
	if r.unique != nil {
		return r.unique.EnqueueUnique(ctx, Key(r.opts.Source, id), data)
	}
	return true, r.to.Enqueue(ctx, data)
}

// hold extends m's lease over a pause of d and the publish after it. It
// reports whether m is still the Relay's to publish. A source that cannot
// extend a lease gets m back (pubsub.Fail, an attempt counted), as does
// one whose lease ran out meanwhile (the source hands m out again).
func (r *Relay) hold(ctx context.Context, m pubsub.Message, d time.Duration) bool {
	ectx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := pubsub.ExtendLease(ectx, m, d+2*r.opts.Timeout)
	cancel()
	switch {
	case err == nil:
		return true
	case errors.Is(err, pubsub.ErrUnsupported):
		r.settle(ctx, m, fmt.Errorf("relay %q: the destination is unavailable and the source cannot hold the message: %w", r.opts.Source, err), false)
		return false
	case errors.Is(err, pubsub.ErrLeaseExpired), errors.Is(err, pubsub.ErrSettled):
		r.log.Warn("relay: the message's lease ran out during the pause; the source hands it out again",
			slog.String("message_id", m.ID()), slog.Any("error", err))
		return false
	default: // the source is unreachable too: its lease may still hold
		return true
	}
}

// sleep waits d, and reports whether it did (false: ctx ended first).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pause is the Relay's pause while its destination is unavailable,
// shared by its workers.
type pause struct {
	mu    sync.Mutex
	n     int       // failures in a row, each after a pause
	until time.Time // the end of the pause
}

// left returns how long the pause lasts still (0: none).
func (p *pause) left() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Until(p.until)
}

// failed records a failed publish and returns the pause: a failure after
// the pause ended makes it twice as long (from first, up to most); one
// during the pause (a publish started before it) leaves it as it is.
func (p *pause) failed(first, most time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Before(p.until) {
		return p.until.Sub(now)
	}
	d := first
	for i := 0; i < p.n && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	p.n++
	p.until = now.Add(d)
	return d
}

// reset ends the pause: the destination took a message.
func (p *pause) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.until = 0, time.Time{}
}

// failure is the Failure of kind about m.
func (r *Relay) failure(kind pubsub.FailureKind, m pubsub.Message, err error, cause pubsub.DeadCause) pubsub.Failure {
	f := pubsub.Failure{Kind: kind, Cause: cause, MessageID: m.ID(), Attempt: pubsub.Attempt(m), Err: err}
	return f
}

// report hands f, with the source's names, to Options.OnFailure, or
// calls log without one.
func (r *Relay) report(f pubsub.Failure, log func()) {
	if r.names != nil {
		f.Topic, f.Subscription = r.names.Name(), r.names.Subscription()
	}
	r.fails.Report(f, log)
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
