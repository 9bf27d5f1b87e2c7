package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// A subscription is a share group (KIP-932) reading the topic's log and
// the subscription's own log. A share-group member auto-accepts, at its
// next poll, every record of its last poll not yet settled; so a member
// here, a worker, holds one delivery at a time and polls again only once
// it is settled. Each Receive takes an idle worker, or makes one, and a
// settled delivery gives its worker back. A worker is a client of its
// own: the cluster splits the records of a partition between members, so
// a subscription's consumers compete however many partitions it has.

// subState is the store's side of one subscription: its generation as
// this process knows it, and its workers.
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
	idle   []*worker // last used first
	all    map[*worker]struct{}
	g      *reader // in consumer-group mode (group.go)
	closed bool
	found  string // the generation whose Kafka topics were found (bound)
}

var _ driver.Subscription = (*subState)(nil)

// worker is one share-group member of a generation of a subscription.
type worker struct {
	s    *subState
	d    subDesc // the generation it reads
	cl   *kgo.Client
	dead atomic.Bool // its generation was forgotten: its deliveries are lost

	mu     sync.Mutex
	ackErr error // of the acks the cluster answered since the last take

	// pending is a record a poll brought after its Receive had ended,
	// handed out by the next Receive on w (a poll would auto-accept it).
	pending *kgo.Record
}

// fetchWait bounds a share fetch that waits for a record: a member
// fetches from one broker at a time (a poll brings one record), so a
// subscription whose logs have leaders on several brokers asks each in
// turn this often.
const fetchWait = 50 * time.Millisecond

// recheckEvery is how often a Receive that got nothing looks whether its
// subscription was deleted or made again (by another process).
const recheckEvery = time.Second

// retryWait is how long a Receive waits after a failed poll.
const retryWait = 250 * time.Millisecond

// holdFor is how long an idle worker may hold records no Receive took
// (a poll that ended with its Receive's ctx may still bring one) before
// it is closed, which gives them back to the cluster for the other
// members: their delivery counts.
const holdFor = time.Second

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

// keep records d as the subscription's generation; the workers of
// another are closed.
func (s *subState) keep(d subDesc) {
	s.mu.Lock()
	if s.have && s.d.Gen == d.Gen {
		s.d = d
		s.mu.Unlock()
		return
	}
	s.d, s.have = d, true
	old := s.takeAllLocked()
	s.mu.Unlock()
	closeAll(old)
	s.closeReader()
}

// forget drops the subscription's generation and closes its workers:
// their deliveries are lost.
func (s *subState) forget() {
	s.mu.Lock()
	s.have = false
	old := s.takeAllLocked()
	s.mu.Unlock()
	closeAll(old)
	s.closeReader()
}

// takeAllLocked removes and returns every worker, marked dead. Called
// with s.mu held.
func (s *subState) takeAllLocked() []*worker {
	all := make([]*worker, 0, len(s.all))
	for w := range s.all {
		w.dead.Store(true)
		all = append(all, w)
	}
	s.all, s.idle = nil, nil
	return all
}

// closeAll closes workers.
func closeAll(workers []*worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(w.cl.Close)
	}
	wg.Wait()
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
// default declares it.
func (s *subState) lookup(ctx context.Context) (subDesc, error) {
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
	// Declared whatever the caller's ctx: a Dequeue that ends first
	// still makes the default a subscription.
	store := s.st.s
	dctx, cancel := store.request(context.WithoutCancel(ctx))
	defer cancel()
	if _, err := store.Subscribe(dctx, s.st.name, s.name, store.env.Defaults); err != nil {
		if ctx.Err() != nil {
			return subDesc{}, ctx.Err()
		}
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
	return s.st.s.configOf(d).Retry.WithDefaults().MaxAttempts
}

// take returns an idle worker of generation d, or a new one.
func (s *subState) take(d subDesc) (*worker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, pubsub.ErrClosed
	}
	if n := len(s.idle); n > 0 {
		// A worker with a pending record first, else the last used.
		i := n - 1
		for j, w := range s.idle {
			if w.holds() {
				i = j
				break
			}
		}
		w := s.idle[i]
		s.idle = slices.Delete(s.idle, i, i+1)
		return w, nil
	}
	o := s.st.s.opts
	n := s.st.n.sub(s.name, d.Gen)
	w := &worker{s: s, d: d}
	cl, err := kgo.NewClient(o.clientOpts(
		kgo.ShareGroup(n.group),
		kgo.ConsumeTopics(s.st.n.log, n.retry),
		kgo.ShareMaxRecords(1),
		kgo.ShareMaxRecordsStrict(),
		kgo.FetchMaxWait(fetchWait),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				w.mu.Lock()
				w.ackErr = err
				w.mu.Unlock()
			}
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("making a member of share group %s: %w", n.group, err)
	}
	w.cl = cl
	if s.all == nil {
		s.all = map[*worker]struct{}{}
	}
	s.all[w] = struct{}{}
	return w, nil
}

// holds reports whether w holds records no Receive took.
func (w *worker) holds() bool { return w.pending != nil || w.cl.BufferedFetchRecords() > 0 }

// put gives w back, idle; a worker of a forgotten generation, or after
// Close, is closed.
func (s *subState) put(w *worker) {
	s.mu.Lock()
	if !s.closed && !w.dead.Load() {
		s.idle = append(s.idle, w)
		s.mu.Unlock()
		time.AfterFunc(holdFor, func() { s.retire(w) })
		return
	}
	delete(s.all, w)
	s.mu.Unlock()
	w.cl.Close()
}

// retire closes w if it is idle and holds records no Receive took.
func (s *subState) retire(w *worker) {
	s.mu.Lock()
	i := slices.Index(s.idle, w)
	if i < 0 || !w.holds() {
		s.mu.Unlock()
		return
	}
	s.idle = slices.Delete(s.idle, i, i+1)
	delete(s.all, w)
	s.mu.Unlock()
	w.cl.Close()
}

// closeWorkers closes every worker for good: the records they hold go
// back to the cluster.
func (s *subState) closeWorkers() {
	s.mu.Lock()
	s.closed = true
	old := s.takeAllLocked()
	s.mu.Unlock()
	closeAll(old)
	s.closeReader()
}

// flush sends w's acks and waits for the cluster's answer.
func (w *worker) flush(ctx context.Context) error {
	rctx, cancel := w.s.st.s.request(ctx)
	defer cancel()
	if err := w.cl.FlushAcks(rctx); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.ackErr
	w.ackErr = nil
	return err
}

// Receive blocks until a record of the subscription is delivered, ctx
// ends, stop is closed or the store closes; a named subscription that
// does not exist, or is deleted meanwhile, is an error wrapping
// pubsub.ErrNoSubscription.
func (s *subState) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	if s.st.s.opts.ConsumerGroups {
		return s.groupReceive(ctx, stop, d)
	}
	if err := s.st.ensure(ctx); err != nil {
		return err
	}
	s.st.startMoverAsync()
	store := s.st.s
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-store.ctx.Done():
		case <-pctx.Done():
		}
		cancel()
	}()
	closed := func() bool {
		select {
		case <-stop:
			return true
		case <-store.ctx.Done():
			return true
		default:
			return false
		}
	}
	for {
		if closed() {
			return pubsub.ErrClosed
		}
		desc, err := s.desc(ctx)
		if err != nil {
			return err
		}
		w, err := s.take(desc)
		if err != nil {
			return err
		}
		m, err := s.receive(ctx, pctx, closed, w)
		if m != nil {
			*d = driver.Delivery{Msg: m, Data: m.r.Value, Header: headerOf(m.r), Attempt: m.attempt}
			return nil
		}
		if err != nil {
			return err
		}
		// Its generation changed: again with the new one.
	}
}

// receive polls w until a record comes, ctx ends, closed reports true or
// w's generation is no longer the subscription's (nil, nil).
func (s *subState) receive(ctx, pctx context.Context, closed func() bool, w *worker) (*message, error) {
	store := s.st.s
	var logged bool
	checked := time.Now()
	for {
		var fetches kgo.Fetches
		if w.pending == nil {
			// Bounded, so that a deletion by another process is noticed.
			rctx, cancel := context.WithTimeout(pctx, recheckEvery)
			fetches = w.cl.PollRecords(rctx, 1)
			cancel()
			if recs := fetches.Records(); len(recs) > 0 {
				w.pending = recs[0]
			}
		}
		if closed() {
			s.put(w)
			return nil, pubsub.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			s.put(w)
			return nil, err
		}
		if w.dead.Load() || (w.pending == nil && time.Since(checked) > recheckEvery) {
			checked = time.Now()
			d, err := s.lookup(ctx)
			if err != nil || w.dead.Load() || d.Gen != w.d.Gen {
				s.put(w)
				return nil, err
			}
		}
		if err := fetchErr(fetches); err != nil && w.pending == nil {
			store.env.Report(pubsub.Failure{Kind: pubsub.FetchRetried, Topic: s.st.name, Subscription: s.name, Err: err})
			if store.opts.OnFailure == nil && !logged {
				store.opts.Logger.Warn("kafkapubsub: dequeue failed; retrying", "topic", s.st.name, "subscription", s.name, "error", err)
				logged = true
			}
			select {
			case <-time.After(retryWait):
			case <-pctx.Done():
			}
			continue
		}
		r := w.pending
		if r == nil {
			continue
		}
		w.pending = nil
		if m := s.accept(w, r); m != nil {
			return m, nil
		}
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
	return r.Topic == s.st.n.log && (d.skips(r.Partition, r.Offset) ||
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

// accept makes a delivery of r, leased, or returns nil after dealing
// with a record not to be handed out: one of the log's published for
// other subscriptions before the default was declared, or delayed before
// the subscription was made (accepted), or one whose last allowed lease
// ran out (dead).
func (s *subState) accept(w *worker, r *kgo.Record) *message {
	store := s.st.s
	if s.skips(w.d, r) {
		r.Ack(kgo.AckAccept)
		return nil
	}
	id := s.idOf(r)
	base, _ := strconv.Atoi(get(r, logstore.HeaderDelivered))
	m := &message{w: w, r: r, id: id, attempt: base + int(r.DeliveryCount())}
	if max := s.maxAttempts(w.d); m.attempt > max {
		// Delivered again after the lease of its last attempt ran out.
		m.attempt = max
		ctx, cancel := store.request(context.Background())
		err := m.kill(ctx, driver.ReasonLeaseExpired)
		if err == nil {
			r.Ack(kgo.AckAccept)
			err = w.flush(ctx)
		}
		cancel()
		if err != nil {
			store.opts.Logger.Error("kafkapubsub: making a message dead after its last lease ran out", "topic", s.st.name,
				"subscription", s.name, "message_id", id, "error", err)
			r.Ack(kgo.AckRelease)
			return nil
		}
		store.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: s.st.name, Subscription: s.name,
			MessageID: id, Attempt: m.attempt, Err: errors.New(driver.ReasonLeaseExpired)})
		return nil
	}
	m.lease(store.opts.Lease)
	return m
}
