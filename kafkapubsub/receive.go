package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// subState is the store's side of one subscription: its generation as
// this process knows it, and its share-group members (share.go) or its
// consumer-group reader (group.go).
type subState struct {
	// DeadLetters is the subscription's dead-letter ability
	// (driver.DeadLetters, driver.DeadDeleter), the log layer's over
	// its dead log (dead.go).
	logstore.DeadLetters

	st   *topicState
	name string

	lookMu   sync.Mutex // one lookup at a time (desc)
	readerMu sync.Mutex // one consumer-group reader made at a time (reader)

	mu     sync.Mutex
	d      subDesc // its registry entry, when have
	have   bool
	sh     members // in share-group mode (share.go)
	g      *reader // in consumer-group mode (group.go)
	closed bool
	found  string // the generation whose Kafka topics were found (bound)
}

var _ driver.Subscription = (*subState)(nil)

// sub returns the state of subscription name of st, made on first use.
func (st *topicState) sub(name string) *subState {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.subs[name]
	if s == nil {
		s = &subState{st: st, name: name}
		s.DeadLetters = logstore.DeadLetters{Log: deadLog{s}, ValidID: validID}
		st.subs[name] = s
	}
	return s
}

// keep records d as the subscription's generation; the members and the
// reader of another are closed.
func (s *subState) keep(d subDesc) {
	s.drop(func() bool {
		same := s.have && s.d.Gen == d.Gen
		s.d, s.have = d, true
		return !same
	})
}

// forget drops the subscription's generation and closes its members and
// reader: their deliveries are lost.
func (s *subState) forget() { s.drop(func() bool { s.have = false; return true }) }

// closeWorkers closes every member and the reader for good: the records
// they hold go back to the cluster.
func (s *subState) closeWorkers() { s.drop(func() bool { s.closed = true; return true }) }

// drop runs change with s.mu held and, if it says so, closes every member
// (takeAllLocked) and the reader.
func (s *subState) drop(change func() bool) {
	s.mu.Lock()
	if !change() {
		s.mu.Unlock()
		return
	}
	old := s.takeAllLocked()
	s.mu.Unlock()
	closeAll(old)
	s.closeReader()
}

// desc returns the subscription's generation: known, else looked up.
func (s *subState) desc(ctx context.Context) (subDesc, error) {
	s.mu.Lock()
	d, have := s.d, s.have
	s.mu.Unlock()
	if have {
		return d, nil
	}
	// The Receives that start together wait for one lookup.
	s.lookMu.Lock()
	defer s.lookMu.Unlock()
	s.mu.Lock()
	d, have = s.d, s.have
	s.mu.Unlock()
	if have {
		return d, nil
	}
	return s.lookup(ctx)
}

// lookup reads the subscription's registry entry: a named one must
// exist (else an error wrapping pubsub.ErrNoSubscription); consuming the
// default declares it. The default's lookup and declaration run to their
// end whatever the caller's ctx, bounded by Options.RequestTimeout and
// Close: a Dequeue that ends first (on a loaded machine, before the
// registry was even read) still makes the default a subscription. The
// caller returns by the end of its ctx.
func (s *subState) lookup(ctx context.Context) (subDesc, error) {
	if s.name != pubsub.DefaultSubscription {
		return s.lookupNow(ctx)
	}
	type result struct {
		d   subDesc
		err error
	}
	done := make(chan result, 1)
	store := s.st.s
	if !store.goBackground(func() {
		dctx, cancel := store.request(context.WithoutCancel(ctx))
		defer cancel()
		d, err := s.lookupNow(dctx)
		done <- result{d, err}
	}) {
		return subDesc{}, pubsub.ErrClosed
	}
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return subDesc{}, ctx.Err()
	}
}

// lookupNow is lookup, within ctx.
func (s *subState) lookupNow(ctx context.Context) (subDesc, error) {
	reg, err := s.st.registry(ctx)
	if err != nil {
		return subDesc{}, err
	}
	if d, ok := reg[s.name]; ok && !d.Reserve {
		if err := s.st.s.sameMode(d); err != nil {
			return subDesc{}, err
		}
		if err := s.bound(ctx, d); err != nil {
			return subDesc{}, err
		}
		s.keep(d)
		return d, nil
	}
	if s.name != pubsub.DefaultSubscription {
		s.forget()
		return subDesc{}, fmt.Errorf("%w %q", pubsub.ErrNoSubscription, s.name)
	}
	store := s.st.s
	if _, err := store.Subscribe(ctx, s.st.name, s.name, store.env.Defaults); err != nil {
		return subDesc{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.have { // deleted meanwhile
		return subDesc{}, fmt.Errorf("%w %q", pubsub.ErrNoSubscription, s.name)
	}
	return s.d, nil
}

// bound returns nil unless, with Options.Bind, the own log or the dead log
// of generation d is missing (an error wrapping ErrNoTopic). It looks
// once per generation found.
func (s *subState) bound(ctx context.Context, d subDesc) error {
	if !s.st.s.opts.Bind {
		return nil
	}
	s.mu.Lock()
	found := s.found == d.Gen
	s.mu.Unlock()
	if found {
		return nil
	}
	if err := s.st.s.lookUp(ctx, subLabel(s.st.name, s.name), s.st.name, s.name, s.st.subTopics(s.name, d.Gen)); err != nil {
		return err
	}
	s.mu.Lock()
	s.found = d.Gen
	s.mu.Unlock()
	return nil
}

// names returns the names of the subscription's generation.
func (s *subState) names(ctx context.Context) (subNames, error) {
	d, err := s.desc(ctx)
	if err != nil {
		return subNames{}, err
	}
	return s.st.n.sub(s.name, d.Gen), nil
}

// maxAttempts is the subscription's MaxAttempts.
func (s *subState) maxAttempts(d subDesc) int {
	return d.Config(s.st.s.env.Defaults).Retry.WithDefaults().MaxAttempts
}

// fetchFailed reports a failed fetch of the subscription's
// (pubsub.FetchRetried), logs it unless OnFailure hears it or one was
// logged since the last that succeeded (logged), and waits retryWait or
// until ctx ends.
func (s *subState) fetchFailed(ctx context.Context, err error, logged *atomic.Bool) {
	store := s.st.s
	store.env.Report(pubsub.Failure{Kind: pubsub.FetchRetried, Topic: s.st.name, Subscription: s.name, Err: err})
	if store.opts.OnFailure == nil && !logged.Swap(true) {
		store.opts.Logger.Warn("kafkapubsub: dequeue failed; retrying", "topic", s.st.name, "subscription", s.name, "error", err)
	}
	select {
	case <-time.After(retryWait):
	case <-ctx.Done():
	}
}

// fetchErr is the first error of fetches, nil if none.
func fetchErr(fetches kgo.Fetches) error {
	for _, e := range fetches.Errors() {
		if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
			continue
		}
		return fmt.Errorf("fetching %s partition %d: %w", e.Topic, e.Partition, e.Err)
	}
	return nil
}

// skips reports whether r, of generation d, is not the subscription's:
// one of the log's published for other subscriptions before the default
// was declared, or delayed before the subscription was made.
func (s *subState) skips(d subDesc, r *kgo.Record) bool {
	return r.Topic == s.st.n.log && (d.Skips(r) ||
		logstore.EnqueuedBefore(func(k string) string { return get(r, k) }, time.Unix(0, d.Created)))
}

// idOf is the ID of the subscription's message whose record is r.
func (s *subState) idOf(r *kgo.Record) string {
	id := get(r, logstore.HeaderID)
	if id == "" { // published by something other than conveyor
		id = "p" + strconv.Itoa(int(r.Partition)) + "-" + strconv.FormatInt(r.Offset, 10)
	}
	if s.name != pubsub.DefaultSubscription && r.Topic == s.st.n.log {
		// Each subscription's copy has an ID of its own; a copy in the
		// subscription's own log carries it already.
		id += "-" + token(s.name)[:10]
	}
	return id
}
