package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// A subscription is a share group (KIP-932) reading the topic's log and
// its own retry log. A share-group member auto-accepts, at its next poll,
// every record of its last poll not yet settled; so a member here, a
// worker, holds one delivery at a time and polls again only once it is
// settled. Each Receive takes an idle worker, or makes one, and a settled
// delivery gives its worker back. A worker is a client of its own: the
// cluster splits the records of a partition between members, so a
// subscription's consumers compete however many partitions it has.

// subState is the store's side of one subscription: its workers.
type subState struct {
	st   *topicState
	name string

	mu     sync.Mutex
	idle   []*worker // last used first
	all    map[*worker]struct{}
	closed bool
}

var _ driver.Subscription = (*subState)(nil)

// worker is one share-group member of a subscription.
type worker struct {
	s  *subState
	cl *kgo.Client

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

// retryWait is how long a Receive waits after a failed poll.
const retryWait = 250 * time.Millisecond

// take returns an idle worker, or a new one.
func (s *subState) take() (*worker, error) {
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
		s.idle = append(s.idle[:i], s.idle[i+1:]...)
		return w, nil
	}
	o := s.st.s.opts
	w := &worker{s: s}
	cl, err := kgo.NewClient(o.clientOpts(
		kgo.ShareGroup(s.st.n.group),
		kgo.ConsumeTopics(s.st.n.log, s.st.n.retry),
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
		return nil, fmt.Errorf("making a member of share group %s: %w", s.st.n.group, err)
	}
	w.cl = cl
	if s.all == nil {
		s.all = map[*worker]struct{}{}
	}
	s.all[w] = struct{}{}
	return w, nil
}

// holdFor is how long an idle worker may hold records no Receive took
// (a poll that ended with its Receive's ctx may still bring one) before
// it is closed, which gives them back to the cluster for the other
// members: their delivery counts.
const holdFor = time.Second

// holds reports whether w holds records no Receive took.
func (w *worker) holds() bool { return w.pending != nil || w.cl.BufferedFetchRecords() > 0 }

// put gives w back, idle; after Close it closes it.
func (s *subState) put(w *worker) {
	s.mu.Lock()
	if !s.closed {
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

// closeWorkers closes every worker: the records they hold go back to the
// cluster.
func (s *subState) closeWorkers() {
	s.mu.Lock()
	s.closed = true
	all := make([]*worker, 0, len(s.all))
	for w := range s.all {
		all = append(all, w)
	}
	s.all, s.idle = nil, nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range all {
		wg.Go(w.cl.Close)
	}
	wg.Wait()
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
// ends, stop is closed or the store closes.
func (s *subState) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	if err := s.st.ensure(ctx); err != nil {
		return err
	}
	w, err := s.take()
	if err != nil {
		return err
	}
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
	var logged bool
	for {
		var fetches kgo.Fetches
		if w.pending == nil {
			fetches = w.cl.PollRecords(pctx, 1)
			if recs := fetches.Records(); len(recs) > 0 {
				w.pending = recs[0]
			}
		}
		if closed() {
			s.put(w)
			return pubsub.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			s.put(w)
			return err
		}
		if err := fetchErr(fetches); err != nil {
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
			*d = driver.Delivery{Msg: m, Data: m.r.Value, Header: headerOf(m.r), Attempt: m.attempt}
			return nil
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

// accept makes a delivery of r, leased, or returns nil after making dead
// a record whose last allowed lease ran out.
func (s *subState) accept(w *worker, r *kgo.Record) *message {
	store := s.st.s
	id := get(r, logstore.HeaderID)
	if id == "" { // published by something other than conveyor
		id = "p" + strconv.Itoa(int(r.Partition)) + "-" + strconv.FormatInt(r.Offset, 10)
	}
	base, _ := strconv.Atoi(get(r, logstore.HeaderDelivered))
	m := &message{w: w, r: r, id: id, attempt: base + int(r.DeliveryCount())}
	if max := store.opts.Retry.MaxAttempts; m.attempt > max {
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
