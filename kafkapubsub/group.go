package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Consumer-group mode (Options.ConsumerGroups), for clusters without share
// groups. A subscription is a Kafka consumer group (classic protocol)
// reading the topic's log and the subscription's own log; each process
// that consumes it has one member, a reader, which owns some of the
// partitions: the cluster splits partitions between processes, not
// records. The reader polls its partitions and hands the records out in
// order, several at once to the process's consumers, each settled on its
// own; the tracker (inflight.go) commits, per partition, only up to the
// first record not settled. Kafka cannot give a record back, so:
//
//   - a Nack appends a copy to the subscription's own log, with the
//     attempts so far (logstore.HeaderDelivered), when it is due
//     (logstore.HeaderDue) and the reason (logstore.HeaderError), then
//     settles the record; the reader holds a copy that is not due yet
//     until it is;
//   - a lease that runs out does the same, due now, or makes the message
//     dead after its last attempt (driver.ReasonLeaseExpired);
//   - a partition revoked (another process joined, or this one closes)
//     is committed up to its mark; the records it had in flight are the
//     new owner's, which delivers them again from there (at least once),
//     with the attempt they had.

// pollBatch is the most records one poll of a reader takes, and
// readyRoom how many fetched records wait for a Receive: a reader holds at
// most about both, plus those in hand and those not due yet.
const (
	pollBatch = 64
	readyRoom = 64
)

// groupFetchWait bounds a fetch of a reader that waits for records.
const groupFetchWait = 500 * time.Millisecond

// commitRetry is how often a reader tries again a commit that failed.
const commitRetry = time.Second

// reader is this process's member of the consumer group of one generation
// of a subscription.
type reader struct {
	s  *subState
	d  subDesc
	n  subNames
	mb member
	cl *kgo.Client // mb's
	tr *tracker

	ready  chan fetched    // due, for Receive
	kick   chan struct{}   // a settle moved a mark: commit
	gone   chan struct{}   // closed by close
	ctx    context.Context // ends at close or the store's Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // its poller, committer and held records
	once   sync.Once
}

// fetched is a record a reader fetched, and its partition's state.
type fetched struct {
	r    *kgo.Record
	part *partition
}

// reader returns the subscription's reader of generation d, started on
// first use; another generation's is closed. It returns nil, nil when
// the subscription changed meanwhile.
func (s *subState) reader(d subDesc) (*reader, error) {
	s.mu.Lock()
	if g := s.g; g != nil && g.d.Gen == d.Gen && !s.closed {
		s.mu.Unlock()
		return g, nil
	}
	s.mu.Unlock()
	// One reader made at a time: the Receives that start together would
	// else each join the group, and rebalance it as each but one leaves.
	s.readerMu.Lock()
	defer s.readerMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, pubsub.ErrClosed
	}
	if g := s.g; g != nil && g.d.Gen == d.Gen {
		s.mu.Unlock()
		return g, nil
	}
	old := s.g
	s.g = nil
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
	store := s.st.s
	g := &reader{s: s, d: d, n: s.st.n.sub(s.name, d.Gen), tr: newTracker(),
		ready: make(chan fetched, readyRoom), kick: make(chan struct{}, 1), gone: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancel(store.ctx)
	mb, err := store.opts.newMember(
		kgo.ConsumerGroup(g.n.cgroup),
		kgo.ConsumeTopics(s.st.n.log, g.n.retry),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Each topic split on its own, cooperatively (balancer.go).
		kgo.Balancers(perTopicBalancer{}),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),                   // until poll's records are tracked
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), // a requeue that lost is aborted
		kgo.FetchMaxWait(groupFetchWait),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) { g.tr.assign(got) }),
		kgo.OnPartitionsRevoked(g.revoked),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			if len(lost) > 0 {
				g.tr.revoke(lost)
			}
		}),
	)
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("making a member of consumer group %s: %w", g.n.cgroup, err)
	}
	g.mb, g.cl = mb, mb.cl
	s.mu.Lock()
	if s.closed || s.g != nil || !s.have || s.d.Gen != d.Gen {
		// Closed, another Receive's reader won, or the generation
		// changed: the caller looks again.
		closed := s.closed
		s.mu.Unlock()
		g.cancel()
		mb.close()
		if closed {
			return nil, pubsub.ErrClosed
		}
		return nil, nil
	}
	s.g = g
	// Started before s.mu is let go: a Close that finds g waits for
	// them (g.wg.Wait), which must not race with their start.
	g.wg.Go(g.poll)
	g.wg.Go(g.commitLoop)
	s.mu.Unlock()
	return g, nil
}

// closeReader closes the subscription's reader, if any.
func (s *subState) closeReader() {
	s.mu.Lock()
	g := s.g
	s.g = nil
	s.mu.Unlock()
	if g != nil {
		g.close()
	}
}

// close stops the reader: it commits what was settled and leaves the
// group; the records in flight are lost to this process (delivered again
// by the partitions' next owner).
func (g *reader) close() {
	g.once.Do(func() {
		close(g.gone)
		g.cancel()
		g.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), g.s.st.s.opts.RequestTimeout)
		defer cancel()
		if err := g.commit(ctx, nil); err != nil {
			g.s.st.s.opts.Logger.Warn("kafkapubsub: committing a consumer group's offsets at close failed",
				"topic", g.s.st.name, "subscription", g.s.name, "error", err)
		}
		g.mb.close() // leaves the group; its last revoke commits nothing new
		g.tr.revoke(nil)
	})
}

// closed reports whether the reader was closed.
func (g *reader) closed() bool {
	select {
	case <-g.gone:
		return true
	default:
		return false
	}
}

// revoked commits the marks of the partitions taken from this member,
// then forgets them.
func (g *reader) revoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	if err := g.commit(ctx, revoked); err != nil && ctx.Err() == nil {
		g.s.st.s.opts.Logger.Warn("kafkapubsub: committing revoked partitions failed; their settled records will be delivered again",
			"topic", g.s.st.name, "subscription", g.s.name, "error", err)
	}
	g.tr.revoke(revoked)
}

// poll fetches records until the reader closes, and hands each out: at
// once if due, else when due; a record not the subscription's is settled.
func (g *reader) poll() {
	var logged atomic.Bool
	for g.ctx.Err() == nil {
		fetches := g.cl.PollRecords(g.ctx, pollBatch)
		// The records are tracked before a rebalance may move their
		// partitions (BlockRebalanceOnPoll): a partition revoked and
		// given back meanwhile would else get this poll's offsets after
		// those its next fetch starts from, and commit past them.
		err := fetchErr(fetches)
		var fs []fetched
		if err == nil && g.ctx.Err() == nil {
			for _, r := range fetches.Records() {
				if part := g.tr.fetched(r.Topic, r.Partition, r.Offset); part != nil {
					fs = append(fs, fetched{r: r, part: part})
				}
			}
		}
		g.cl.AllowRebalance()
		if g.ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			g.s.fetchFailed(g.ctx, err, &logged)
			continue
		}
		logged.Store(false)
		for _, f := range fs {
			r := f.r
			if g.s.skips(g.d, r) {
				g.settle(f)
				continue
			}
			if wait := logstore.DueIn(func(k string) string { return get(r, k) }, time.Now()); wait > 0 {
				g.wg.Go(func() {
					t := time.NewTimer(wait)
					defer t.Stop()
					select {
					case <-t.C:
						g.push(f)
					case <-g.ctx.Done():
					}
				})
				continue
			}
			if !g.push(f) {
				return
			}
		}
	}
}

// push hands f to a Receive; false when the reader closed first.
func (g *reader) push(f fetched) bool {
	select {
	case g.ready <- f:
		return true
	case <-g.ctx.Done():
		return false
	}
}

// settle notes f settled and has its mark committed; false when its
// partition is no longer this member's.
func (g *reader) settle(f fetched) bool {
	if !g.tr.settle(f.part, f.r.Offset) {
		return false
	}
	select {
	case g.kick <- struct{}{}:
	default:
	}
	return true
}

// commitLoop commits the marks that moved, until the reader closes.
func (g *reader) commitLoop() {
	t := time.NewTicker(commitRetry)
	defer t.Stop()
	var logged bool
	for {
		select {
		case <-g.kick:
		case <-t.C:
		case <-g.ctx.Done():
			return
		}
		err := g.commit(g.ctx, nil)
		switch {
		case err == nil || g.ctx.Err() != nil:
			logged = false
		case !logged: // once until a commit succeeds
			g.s.st.s.opts.Logger.Warn("kafkapubsub: committing a consumer group's offsets failed; retrying",
				"topic", g.s.st.name, "subscription", g.s.name, "error", err)
			logged = true
		}
	}
}

// commit commits the marks that moved of the partitions of only (all
// with nil).
func (g *reader) commit(ctx context.Context, only map[string][]int32) error {
	marks := g.tr.marks(only)
	if len(marks) == 0 {
		return nil
	}
	var err error
	g.cl.CommitOffsetsSync(ctx, marks, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
		err = e
		if resp == nil {
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err == nil {
					err = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	})
	if err != nil {
		return fmt.Errorf("committing the offsets of consumer group %s: %w", g.n.cgroup, err)
	}
	g.tr.committed(marks)
	return nil
}

// groupReceive is Receive in consumer-group mode.
func (s *subState) groupReceive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	if err := s.st.ensure(ctx); err != nil {
		return err
	}
	s.st.startMoverAsync()
	store := s.st.s
	recheck := time.NewTicker(recheckEvery)
	defer recheck.Stop()
	for {
		desc, err := s.desc(ctx)
		if err != nil {
			return err
		}
		g, err := s.reader(desc)
		if err != nil {
			return err
		}
		if g == nil {
			continue
		}
	wait:
		for {
			// An ended ctx gets no record, even one ready.
			if err := ctx.Err(); err != nil {
				return err
			}
			select {
			case f := <-g.ready:
				if g.closed() || !g.tr.owned(f.part) {
					continue // revoked: the partition's next owner delivers it
				}
				m := g.deliver(f)
				*d = driver.Delivery{Msg: m, Data: f.r.Value, Header: headerOf(f.r), Attempt: m.attempt}
				return nil
			case <-g.gone:
				break wait
			case <-stop:
				return pubsub.ErrClosed
			case <-store.ctx.Done():
				return pubsub.ErrClosed
			case <-ctx.Done():
				return ctx.Err()
			case <-recheck.C:
				// Deleted or made again by another process?
				now, err := s.lookup(ctx)
				if err != nil {
					return err
				}
				if now.Gen != g.d.Gen {
					break wait
				}
			}
		}
	}
}

// deliver makes a delivery of f, leased.
func (g *reader) deliver(f fetched) *gmessage {
	base, _ := strconv.Atoi(get(f.r, logstore.HeaderDelivered))
	m := &gmessage{g: g, f: f, id: g.s.idOf(f.r), attempt: base + 1}
	m.lease(g.s.st.s.opts.Lease)
	return m
}
