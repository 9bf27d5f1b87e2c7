package kafkapubsub

import (
	"context"
	"errors"
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
// the subscription's own log. A member of the group, a client of its own,
// acquires records for this process; its next poll accepts every record
// of its last poll not yet settled, so a member polls again only once all
// it brought are settled. A process pools a subscription's members: the
// Receives waiting ask for records, and polls run, each on an idle member,
// until what they may bring covers the Receives waiting (pump); with a
// log of several partitions, while Receives wait and no record is kept,
// every idle member polls, since the cluster gives each member only some
// of the partitions (the share group's assignor splits them, and does not
// tell this process which member has which). A member
// brings at most its size from each broker (memberSizes: the largest not
// above what is asked: the Receives waiting, or what they take in
// aheadFor at their recent rate), so that it does not acquire records,
// which other processes would then wait for, for Receives that do not
// exist. What a poll brings beyond the Receives waiting is kept for the
// next ones and released if none waits for holdFor. A member fetches only
// while it polls (its topics are paused otherwise), from every broker at
// once; what a fetch still under way when its poll ended brings waits in
// the member for its next poll, which comes at once if it is idle and
// Receives wait, and is released if none waits once it was idle for
// holdFor. Kafka counts a released record's delivery; this process does
// not count it in the attempt when it delivers the record later
// (members.released), another process does.

// memberSizes are the sizes of members: the most records a member brings
// from one broker in one poll.
var memberSizes = [...]int{1, 8, 64, 512}

// maxMembers bounds the members of one subscription in one process.
const maxMembers = 256

// fetchWait bounds a fetch that waits for a record; a poll that got none
// ends after recheckEvery.
const fetchWait = 100 * time.Millisecond

// recheckEvery is how often a Receive that got nothing looks whether its
// subscription was deleted or made again (by another process), and how
// long a poll waits.
const recheckEvery = time.Second

// retryWait is how long a member waits after a failed poll.
const retryWait = 250 * time.Millisecond

// holdFor is how long a record a poll brought may wait for a Receive, and
// an idle member may hold records it fetched after its poll, before they
// are released for the other members.
const holdFor = time.Second

// worker is one share-group member of a generation of a subscription.
type worker struct {
	s      *subState
	d      subDesc
	size   int
	topics []string // the log and the subscription's own log
	cl     *kgo.Client
	dead   atomic.Bool // its generation was forgotten: its deliveries are lost

	// polling is set while it polls; kicked while a kick (a record
	// fetched after its poll) is on its way.
	polling, kicked atomic.Bool

	mu sync.Mutex
	// fails counts, per partition, the acknowledgements the cluster
	// refused, and keeps the last error (ack).
	fails map[topicPartition]ackFails

	// Under s.mu: the records of its last poll not yet settled (held by
	// consumers or kept in members.ready), when it became idle, and
	// whether it was swept (sweep) since.
	out    int
	idleAt time.Time
	swept  bool
}

// OnFetchRecordBuffered hears of a record w fetched (kgo.HookFetchRecordBuffered):
// one that came after its poll ended (a fetch still under way when it
// paused) makes it poll again, if it is idle and Receives wait (kick).
// Locks are not taken here: franz-go calls it from its fetch.
func (w *worker) OnFetchRecordBuffered(*kgo.Record) {
	if !w.polling.Load() && !w.kicked.Swap(true) {
		go w.s.kick(w)
	}
}

// kick polls w for the Receives waiting if it is idle (pollBufferedLocked).
func (s *subState) kick(w *worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.kicked.Store(false)
	s.pollBufferedLocked(w)
}

// pollBufferedLocked polls w, idle with records it fetched after its last
// poll, if Receives wait for more than is kept: its records would else
// wait for its next poll while other members poll for nothing. Called
// with s.mu held.
func (s *subState) pollBufferedLocked(w *worker) {
	p := &s.sh
	i := slices.Index(p.idle, w)
	if i < 0 || p.wanting <= len(p.ready) || s.closed || !s.have || s.d.Gen != w.d.Gen {
		return
	}
	p.takeIdleLocked(i)
	s.startPollLocked(w)
}

// startPollLocked starts a poll of w, taken from the idle members, and
// counts what it may bring as asked; it reports false when the store is
// closed. Called with s.mu held.
func (s *subState) startPollLocked(w *worker) bool {
	p := &s.sh
	p.asked += w.size
	if !s.st.s.goBackground(func() { s.poll(w) }) {
		p.asked -= w.size
		return false
	}
	return true
}

// ackFails is what a member's partition's refused acknowledgements left.
type ackFails struct {
	n   int
	err error
}

// recordKey names a record.
type recordKey struct {
	topic     string
	partition int32
	offset    int64
}

// release is what members.released keeps of a record.
type release struct {
	n  int
	at time.Time
}

// forgetReleases is how long members.released keeps a record.
const forgetReleases = 10 * time.Minute

// kept is a record a poll brought that no Receive took yet.
type kept struct {
	w  *worker
	r  *kgo.Record
	at time.Time
}

// members is a subscription's share-group members in this process, under
// subState.mu.
type members struct {
	all     map[*worker]struct{}
	idle    []*worker     // with nothing out, last used last
	ready   []kept        // brought by polls, not yet taken, oldest first
	wanting int           // Receives waiting
	asked   int           // the records the polls running may bring
	wake    chan struct{} // closed when ready grows or a poll ends; nil if none waits
	lapse   *time.Timer   // runs sweep
	logged  atomic.Bool   // a failed poll was logged, and none succeeded since

	// released are the records this process released without handing
	// them out (sweep), and when: a delivery of one here later does not
	// count that release as an attempt (accept).
	released map[recordKey]release

	// The rate at which this process's Receives take records: handed
	// since rateSince, folded into rate (per second) as polls start.
	handed    int
	rateSince time.Time
	rate      float64
}

// aheadFor is how long the records a poll asks for beyond the Receives
// waiting should last at the rate they are taken.
const aheadFor = 100 * time.Millisecond

// sizeFor is the size of a member to poll for n records.
func sizeFor(n int) int {
	size := memberSizes[0]
	for _, sz := range memberSizes {
		if sz <= n {
			size = sz
		}
	}
	return size
}

// Receive blocks until a record of the subscription is delivered, ctx
// ends, stop is closed or the store closes; a named subscription that
// does not exist, or is deleted meanwhile, is an error wrapping
// pubsub.ErrNoSubscription. In consumer-group mode: groupReceive.
func (s *subState) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	if s.st.s.opts.ConsumerGroups {
		return s.groupReceive(ctx, stop, d)
	}
	if err := s.st.ensure(ctx); err != nil {
		return err
	}
	s.st.startMoverAsync()
	store := s.st.s
	checked := time.Now()
	for {
		select {
		case <-stop:
			return pubsub.ErrClosed
		case <-store.ctx.Done():
			return pubsub.ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		desc, err := s.desc(ctx)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return pubsub.ErrClosed
		}
		if k, ok := s.popLocked(desc); ok {
			s.sh.handed++
			here := s.releasedHereLocked(k.r)
			s.mu.Unlock()
			if m := s.accept(k.w, k.r, here); m != nil {
				*d = driver.Delivery{Msg: m, Data: m.r.Value, Header: headerOf(m.r), Attempt: m.attempt}
				return nil
			}
			continue
		}
		p := &s.sh
		p.wanting++
		s.pumpLocked(desc)
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake := p.wake
		s.mu.Unlock()
		t := time.NewTimer(max(recheckEvery-time.Since(checked), 0))
		select {
		case <-wake:
		case <-ctx.Done():
		case <-stop:
		case <-store.ctx.Done():
		case <-t.C:
		}
		t.Stop()
		s.mu.Lock()
		p.wanting--
		s.mu.Unlock()
		if time.Since(checked) >= recheckEvery && ctx.Err() == nil {
			checked = time.Now()
			if _, err := s.lookup(ctx); err != nil {
				return err
			}
		}
	}
}

// popLocked takes the oldest record kept for generation d; those of
// members closed meanwhile are dropped (the cluster has them back).
// Called with s.mu held.
func (s *subState) popLocked(d subDesc) (kept, bool) {
	p := &s.sh
	for len(p.ready) > 0 {
		k := p.ready[0]
		p.ready[0] = kept{}
		p.ready = p.ready[1:]
		if !k.w.dead.Load() && k.w.d.Gen == d.Gen {
			return k, true
		}
	}
	return kept{}, false
}

// wakeLocked wakes the Receives waiting. Called with s.mu held.
func (p *members) wakeLocked() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// pumpLocked starts polls of generation d, each on an idle member, until
// what they may bring and what is kept cover the Receives waiting.
// Called with s.mu held.
func (s *subState) pumpLocked(d subDesc) {
	p := &s.sh
	for !s.closed && s.have && s.d.Gen == d.Gen {
		need := p.wanting - len(p.ready) - p.asked
		if need <= 0 {
			// Receives wait for records none kept: with more than one
			// partition, every idle member polls too. The share group's
			// assignor splits the partitions between the members, and
			// this process cannot see which member has which: only
			// polls on all of them cover every partition. With one,
			// every member has it, and polls one at a time keep the
			// order of enqueue.
			for s.st.parts.Load() > 1 && p.wanting > len(p.ready) && len(p.idle) > 0 {
				if !s.startPollLocked(p.takeIdleLocked(len(p.idle) - 1)) {
					return
				}
			}
			return
		}
		now := time.Now()
		if elapsed := now.Sub(p.rateSince); elapsed >= 10*time.Millisecond {
			if !p.rateSince.IsZero() {
				p.rate = (p.rate + float64(p.handed)/elapsed.Seconds()) / 2
			}
			p.handed, p.rateSince = 0, now
		}
		w, err := s.memberLocked(d, max(need, int(p.rate*aheadFor.Seconds())))
		if err != nil {
			s.st.s.opts.Logger.Error("kafkapubsub: making a share-group member", "topic", s.st.name, "subscription", s.name, "error", err)
			return
		}
		if w == nil { // maxMembers, none idle
			return
		}
		if !s.startPollLocked(w) {
			return
		}
	}
}

// memberLocked takes an idle member of generation d to poll for need
// records (the Receives waiting, or as many as they take in aheadFor at
// their recent rate if that is more): one holding records it fetched
// already, else one of sizeFor(need). Without one, it makes one; while
// that joins the group (a heartbeat or more), idle, a smaller idle member
// polls if there is one. At maxMembers: the largest idle member not above
// sizeFor(need), else the smallest; nil if none is idle. Called with s.mu
// held.
func (s *subState) memberLocked(d subDesc, need int) (*worker, error) {
	p := &s.sh
	size := sizeFor(need)
	exact, below, above := -1, -1, -1
	for i, w := range p.idle {
		switch {
		case w.cl.BufferedFetchRecords() > 0:
			return p.takeIdleLocked(i), nil
		case w.size == size:
			exact = i
		case w.size < size && (below < 0 || w.size > p.idle[below].size):
			below = i
		case w.size > size && (above < 0 || w.size < p.idle[above].size):
			above = i
		}
	}
	if exact >= 0 {
		return p.takeIdleLocked(exact), nil
	}
	if len(p.all) >= maxMembers {
		switch {
		case below >= 0:
			return p.takeIdleLocked(below), nil
		case above >= 0:
			return p.takeIdleLocked(above), nil
		}
		return nil, nil
	}
	w, err := s.newMember(d, size)
	if err != nil {
		return nil, err
	}
	if p.all == nil {
		p.all = map[*worker]struct{}{}
	}
	p.all[w] = struct{}{}
	if below < 0 {
		return w, nil
	}
	w.cl.PauseFetchTopics(w.topics...)
	w.idleAt, w.swept = time.Now(), false
	p.idle = append(p.idle, w)
	return p.takeIdleLocked(below), nil
}

// takeIdleLocked removes and returns idle member i. Called with s.mu held.
func (p *members) takeIdleLocked(i int) *worker {
	w := p.idle[i]
	p.idle = slices.Delete(p.idle, i, i+1)
	return w
}

// newMember makes a member of generation d's share group bringing at most
// size records from each broker per poll.
func (s *subState) newMember(d subDesc, size int) (*worker, error) {
	n := s.st.n.sub(s.name, d.Gen)
	w := &worker{s: s, d: d, size: size, topics: []string{s.st.n.log, n.retry}}
	cl, err := kgo.NewClient(s.st.s.opts.clientOpts(
		kgo.ShareGroup(n.group),
		kgo.ConsumeTopics(w.topics...),
		kgo.ShareMaxRecords(int32(size)),
		kgo.ShareMaxRecordsStrict(),
		// Every broker at once: a poll does not wait out one broker's
		// empty fetch before it asks the next.
		kgo.MaxConcurrentFetches(64),
		kgo.FetchMaxWait(fetchWait),
		kgo.WithHooks(w),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if err := rs.Error(); err != nil {
				w.mu.Lock()
				if w.fails == nil {
					w.fails = map[topicPartition]ackFails{}
				}
				for _, r := range rs {
					if r.Err != nil {
						p := topicPartition{r.Topic, r.Partition}
						w.fails[p] = ackFails{n: w.fails[p].n + 1, err: r.Err}
					}
				}
				w.mu.Unlock()
				if !s.st.s.opts.ConfirmAck {
					s.st.s.opts.Logger.Warn("kafkapubsub: the cluster refused acknowledgements; their records will be delivered again",
						"topic", s.st.name, "subscription", s.name, "error", err)
				}
			}
		}),
	)...)
	if err != nil {
		return nil, err
	}
	w.cl = cl
	return w, nil
}

// poll polls w once, for up to recheckEvery, and keeps what it brings for
// the Receives.
func (s *subState) poll(w *worker) {
	store := s.st.s
	ctx, cancel := context.WithTimeout(store.ctx, recheckEvery)
	w.polling.Store(true)
	w.cl.ResumeFetchTopics(w.topics...)
	fetches := w.cl.PollRecords(ctx, -1)
	w.cl.PauseFetchTopics(w.topics...)
	w.polling.Store(false)
	cancel()
	recs := fetches.Records()
	err := fetchErr(fetches)
	if err != nil && !w.dead.Load() && store.ctx.Err() == nil {
		s.fetchFailed(store.ctx, err, &s.sh.logged)
	} else if err == nil {
		s.sh.logged.Store(false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &s.sh
	p.asked -= w.size
	now := time.Now()
	for _, r := range recs {
		p.ready = append(p.ready, kept{w: w, r: r, at: now})
	}
	w.out += len(recs)
	if w.out == 0 {
		s.idleLocked(w)
	}
	s.armLocked()
	p.wakeLocked()
	if s.have {
		s.pumpLocked(s.d)
	}
}

// settled counts a record of w's last poll settled.
func (s *subState) settled(w *worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.out--
	if w.out == 0 {
		s.idleLocked(w)
		if s.have {
			s.pumpLocked(s.d)
		}
	}
}

// idleLocked gives w, with nothing out, back to the idle members, unless
// its generation was forgotten or the store closed. Called with s.mu
// held.
func (s *subState) idleLocked(w *worker) {
	p := &s.sh
	if s.closed || w.dead.Load() { // closed by takeAllLocked's caller
		return
	}
	w.idleAt, w.swept = time.Now(), false
	p.idle = append(p.idle, w)
	s.armLocked()
	if w.cl.BufferedFetchRecords() > 0 {
		s.pollBufferedLocked(w)
	}
}

// armLocked sets the sweep for the oldest kept record's holdFor, or an
// idle member's not swept yet. Called with s.mu held.
func (s *subState) armLocked() {
	p := &s.sh
	var next time.Time
	if len(p.ready) > 0 {
		next = p.ready[0].at
	}
	for _, w := range p.idle {
		if !w.swept && (next.IsZero() || w.idleAt.Before(next)) {
			next = w.idleAt
		}
	}
	if next.IsZero() || p.lapse != nil {
		return
	}
	p.lapse = time.AfterFunc(max(time.Until(next.Add(holdFor)), holdFor/10), func() {
		store := s.st.s
		if !store.goBackground(s.sweep) {
			s.mu.Lock()
			p.lapse = nil
			s.mu.Unlock()
		}
	})
}

// sweep releases the records kept holdFor with no Receive taking them,
// and those that members idle for holdFor fetched after their poll while
// no Receive waits (else it polls such a member).
func (s *subState) sweep() {
	s.mu.Lock()
	p := &s.sh
	p.lapse = nil
	now := time.Now()
	var back []kept
	for p.wanting == 0 && len(p.ready) > 0 && now.Sub(p.ready[0].at) >= holdFor {
		back = append(back, p.ready[0])
		p.ready[0] = kept{}
		p.ready = p.ready[1:]
	}
	var drain []*worker
	for i := 0; i < len(p.idle); {
		w := p.idle[i]
		if w.swept || now.Sub(w.idleAt) < holdFor {
			i++
			continue
		}
		w.swept = true
		if w.cl.BufferedFetchRecords() == 0 {
			i++
			continue
		}
		if p.wanting > len(p.ready) {
			s.pollBufferedLocked(w) // takes it out of idle
			continue
		}
		drain = append(drain, w)
		p.idle = slices.Delete(p.idle, i, i+1)
		w.out = 1 // the sweep's: no poll takes it meanwhile
	}
	s.armLocked()
	s.mu.Unlock()

	ctx, cancel := s.st.s.request(context.Background())
	defer cancel()
	flush := map[*worker]bool{}
	var released []*kgo.Record
	for _, k := range back {
		if s.unseen(ctx, k.w, k.r) {
			released = append(released, k.r)
		}
		flush[k.w] = true
	}
	for _, w := range drain {
		// Taken (a nil ctx takes what is buffered, without waiting),
		// then released, so that it is known which.
		w.cl.ResumeFetchTopics(w.topics...)
		recs := w.cl.PollRecords(nil, -1).Records()
		w.cl.PauseFetchTopics(w.topics...)
		for _, r := range recs {
			if s.unseen(ctx, w, r) {
				released = append(released, r)
			}
		}
		flush[w] = true
	}
	s.mu.Lock()
	if p.released == nil {
		p.released = map[recordKey]release{}
	}
	for _, r := range released {
		k := recordKey{r.Topic, r.Partition, r.Offset}
		p.released[k] = release{n: p.released[k].n + 1, at: now}
	}
	for k, r := range p.released {
		if now.Sub(r.at) > forgetReleases {
			delete(p.released, k)
		}
	}
	s.mu.Unlock()
	for w := range flush {
		_ = w.cl.FlushAcks(ctx)
	}
	for _, k := range back {
		s.settled(k.w)
	}
	for _, w := range drain {
		s.settled(w)
	}
}

// unseen gives r, acquired by w and handed to no consumer, back to the
// cluster: released, unless its delivery count reached the cluster's
// limit (a release would archive it), then appended again to the
// subscription's own log with the attempts it had before this delivery
// (as giveBack does) and accepted. It reports whether it released r.
func (s *subState) unseen(ctx context.Context, w *worker, r *kgo.Record) bool {
	store := s.st.s
	if int(r.DeliveryCount()) < store.opts.DeliveryLimit {
		r.Ack(kgo.AckRelease)
		return true
	}
	base, _ := strconv.Atoi(get(r, logstore.HeaderDelivered))
	c := copyRecord(r, s.idOf(r), s.st.n.sub(s.name, w.d.Gen).retry)
	c.Headers = append(c.Headers, kgo.RecordHeader{Key: logstore.HeaderDelivered,
		Value: []byte(strconv.Itoa(base + int(r.DeliveryCount()) - 1 - s.releasedHere(r)))})
	if err := store.produce(ctx, c); err != nil {
		store.opts.Logger.Error("kafkapubsub: a record past the delivery limit, fetched for no consumer, could not be appended again; released",
			"topic", s.st.name, "subscription", s.name, "error", err)
		r.Ack(kgo.AckRelease)
		return true
	}
	r.Ack(kgo.AckAccept)
	return false
}

// releasedHere returns how many times this process released r without
// handing it out, and forgets it.
func (s *subState) releasedHere(r *kgo.Record) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releasedHereLocked(r)
}

// releasedHereLocked is releasedHere, called with s.mu held (Receive
// holds it to take the record).
func (s *subState) releasedHereLocked(r *kgo.Record) int {
	if len(s.sh.released) == 0 {
		return 0
	}
	k := recordKey{r.Topic, r.Partition, r.Offset}
	n := s.sh.released[k].n
	if n > 0 {
		delete(s.sh.released, k)
		n = min(n, int(r.DeliveryCount())-1)
	}
	return n
}

// takeAllLocked removes and returns every member, marked dead, and
// forgets the records kept: closing the members gives them back. Called
// with s.mu held.
func (s *subState) takeAllLocked() []*worker {
	p := &s.sh
	all := make([]*worker, 0, len(p.all))
	for w := range p.all {
		w.dead.Store(true)
		all = append(all, w)
	}
	p.all, p.idle, p.ready = nil, nil, nil
	p.wakeLocked()
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

// ack settles r, one of w's records, with status; with confirm it waits
// for the cluster's answer, and returns an error if the cluster refused
// an acknowledgement of r's partition meanwhile (one sent before r's may
// make r's Ack fail all the same: the cluster's answers are per partition,
// never per record, so a refusal is never taken for success).
func (w *worker) ack(ctx context.Context, r *kgo.Record, status kgo.AckStatus, confirm bool) error {
	p := topicPartition{r.Topic, r.Partition}
	w.mu.Lock()
	before := w.fails[p].n
	w.mu.Unlock()
	r.Ack(status)
	if !confirm {
		return nil
	}
	rctx, cancel := w.s.st.s.request(ctx)
	defer cancel()
	if err := w.cl.FlushAcks(rctx); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.fails[p]; f.n > before {
		return f.err
	}
	return nil
}

// accept makes a delivery of r, leased, or returns nil after dealing
// with a record not to be handed out: one of the log's published for
// other subscriptions before the default was declared, or delayed before
// the subscription was made (accepted), or one whose last allowed lease
// ran out (dead). releasedHere is how often this process released r
// unseen (releasedHereLocked), not counted in its attempt.
func (s *subState) accept(w *worker, r *kgo.Record, releasedHere int) *message {
	store := s.st.s
	if s.skips(w.d, r) {
		ctx, cancel := store.request(context.Background())
		_ = w.ack(ctx, r, kgo.AckAccept, true) // else the member's next poll sends it
		cancel()
		s.settled(w)
		return nil
	}
	id := s.idOf(r)
	base, _ := strconv.Atoi(get(r, logstore.HeaderDelivered))
	m := &message{w: w, r: r, id: id, attempt: base + int(r.DeliveryCount()) - releasedHere}
	if max := s.maxAttempts(w.d); m.attempt > max {
		// Delivered again after the lease of its last attempt ran out.
		m.attempt = max
		ctx, cancel := store.request(context.Background())
		err := m.kill(ctx, driver.ReasonLeaseExpired)
		if err == nil {
			err = w.ack(ctx, r, kgo.AckAccept, true)
		}
		cancel()
		if err != nil {
			store.opts.Logger.Error("kafkapubsub: making a message dead after its last lease ran out", "topic", s.st.name,
				"subscription", s.name, "message_id", id, "error", err)
			r.Ack(kgo.AckRelease)
			s.settled(w)
			return nil
		}
		s.settled(w)
		store.env.Report(pubsub.Failure{Kind: pubsub.Dead, Cause: pubsub.LeaseExpired, Topic: s.st.name, Subscription: s.name,
			MessageID: id, Attempt: m.attempt, Err: errors.New(driver.ReasonLeaseExpired)})
		return nil
	}
	m.lease(store.opts.Lease)
	return m
}
