package kafkapubsub

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A delayed message waits in the topic's delay log (names.go), the log
// layer's (logstore: its headers, Move), until it is due: then it is
// published to the topic's log like any message, for every subscription
// the topic has at that time. Every process that consumes the topic or
// delays a message on it runs a mover, a member of the delay log's
// consumer group (one partition: one mover at a time reads it). Kafka
// cannot give a record back for later, so the mover keeps the records not
// due yet in memory (Later), publishes each when due, and commits the
// delay log's offset up to the first record not yet published: a mover
// stopped (or whose partition moved to another) leaves the rest to the
// next, which publishes again those published since the last commit
// (with the same message ID: at least once).

// moverGroup is the consumer group of a topic's delay log.
func (n names) moverGroup() string { return n.prefix + ".m." + n.tok }

// delayLog is the topic's delay log.
func (n names) delayLog() string { return n.prefix + ".w." + n.tok }

// publishAt keeps the message in the topic's delay log until at.
func (st *topicState) publishAt(ctx context.Context, data []byte, h pubsub.Header, at time.Time) error {
	if err := st.startMover(ctx); err != nil {
		return err
	}
	r := &kgo.Record{Topic: st.n.delayLog(), Value: data}
	set := func(k, v string) { r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	set(logstore.HeaderID, newID())
	logstore.DelayFields(set, at, time.Now())
	putHeader(r, h)
	return st.s.produce(ctx, r)
}

// startMoverAsync starts the topic's mover in the background, unless it
// runs: a consumer starts it, without waiting for it.
func (st *topicState) startMoverAsync() {
	st.mu.Lock()
	started := st.moving || st.starting
	st.starting = true
	st.mu.Unlock()
	if started {
		return
	}
	s := st.s
	s.goBackground(func() {
		for s.ctx.Err() == nil {
			err := st.startMover(s.ctx)
			if err == nil {
				return
			}
			select {
			case <-time.After(retryWait):
			case <-s.ctx.Done():
			}
		}
	})
}

// startMover makes the delay log and starts the topic's mover in this
// store, once. With Options.Bind the delay log is not made: ensure found
// it.
func (st *topicState) startMover(ctx context.Context) error {
	st.mu.Lock()
	started := st.moving
	st.mu.Unlock()
	if started {
		return nil
	}
	if !st.s.opts.Bind {
		if _, err := st.s.createTopic(ctx, st.delayTopic()); err != nil {
			return err
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.moving {
		return nil
	}
	mv := &mover{st: st, done: map[int64]bool{}, next: -1}
	mb, err := st.s.opts.newMember(
		kgo.ConsumerGroup(st.n.moverGroup()),
		kgo.ConsumeTopics(st.n.delayLog()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { mv.reset() }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { mv.reset() }),
	)
	if err != nil {
		return st.s.fail(ctx, "starting the mover of "+st.name, err)
	}
	mv.mb, mv.cl = mb, mb.cl
	if !st.s.goBackground(mv.run) {
		mb.close()
		return pubsub.ErrClosed
	}
	st.moving = true
	return nil
}

// mover publishes a topic's delayed messages when due.
type mover struct {
	st *topicState
	mb member
	cl *kgo.Client // mb's

	mu      sync.Mutex
	waiting waitHeap       // read, not due yet
	done    map[int64]bool // offsets published, above next
	next    int64          // the first offset not published (-1: none read yet)
}

// reset forgets what the mover read: its partition went to another.
func (mv *mover) reset() {
	mv.mu.Lock()
	mv.waiting, mv.done, mv.next = nil, map[int64]bool{}, -1
	mv.mu.Unlock()
}

// run moves until the store closes.
func (mv *mover) run() {
	defer mv.mb.close()
	s := mv.st.s
	logstore.RunMover(s.ctx, mv.once, func(error) time.Duration { return retryWait }, func(err error) bool {
		s.opts.Logger.Warn("kafkapubsub: moving delayed messages failed; retrying", "topic", mv.st.name, "error", err)
		return true
	})
}

// once publishes what is due, commits, and polls the delay log until the
// next one is due (at most a second).
func (mv *mover) once(ctx context.Context) error {
	for {
		mv.mu.Lock()
		var d *delayed
		if len(mv.waiting) > 0 && !time.Now().Before(mv.waiting[0].at) {
			d = heap.Pop(&mv.waiting).(*delayed)
		}
		mv.mu.Unlock()
		if d == nil {
			break
		}
		if err := logstore.Move(ctx, d); err != nil {
			_ = d.Later(retryWait)
			return err
		}
	}
	if err := mv.commit(ctx); err != nil {
		return err
	}
	wait := time.Second
	mv.mu.Lock()
	if len(mv.waiting) > 0 {
		wait = min(wait, time.Until(mv.waiting[0].at))
	}
	mv.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
	fetches := mv.cl.PollFetches(pctx)
	cancel()
	if err := fetchErr(fetches); err != nil && ctx.Err() == nil {
		return err
	}
	for _, r := range fetches.Records() {
		mv.mu.Lock()
		if mv.next < 0 {
			mv.next = r.Offset
		}
		mv.mu.Unlock()
		if err := logstore.Move(ctx, &delayed{mv: mv, r: r}); err != nil {
			return err
		}
	}
	return nil
}

// commit commits the delay log's offset up to the first record not yet
// published.
func (mv *mover) commit(ctx context.Context) error {
	mv.mu.Lock()
	from := mv.next
	for mv.next >= 0 && mv.done[mv.next] {
		delete(mv.done, mv.next)
		mv.next++
	}
	to := mv.next
	mv.mu.Unlock()
	if to == from {
		return nil
	}
	var err error
	mv.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{
		mv.st.n.delayLog(): {0: {Epoch: -1, Offset: to}},
	}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
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
		return fmt.Errorf("committing the delay log's offset: %w", err)
	}
	return nil
}

// delayed is a record of the delay log, read by the mover.
type delayed struct {
	mv *mover
	r  *kgo.Record
	at time.Time // when due, once given back (Later)
}

// Get returns the record's header key.
func (d *delayed) Get(key string) string { return get(d.r, key) }

// Later keeps the record until wait has passed.
func (d *delayed) Later(wait time.Duration) error {
	d.at = time.Now().Add(wait)
	d.mv.mu.Lock()
	heap.Push(&d.mv.waiting, d)
	d.mv.mu.Unlock()
	return nil
}

// Publish publishes the record's message to the topic's log, with its
// ID, enqueue time and header.
func (d *delayed) Publish(ctx context.Context) error {
	st := d.mv.st
	if err := st.ensurePublishable(ctx); err != nil {
		return err
	}
	c := &kgo.Record{Topic: st.n.log, Value: d.r.Value}
	for _, h := range d.r.Headers {
		if h.Key == logstore.HeaderID || h.Key == logstore.HeaderEnqueued {
			c.Headers = append(c.Headers, h)
		} else if _, _, ok := fromWire(h); ok {
			c.Headers = append(c.Headers, h)
		}
	}
	return st.s.produce(ctx, c)
}

// Done marks the record published; commit commits it.
func (d *delayed) Done(context.Context) error {
	d.mv.mu.Lock()
	defer d.mv.mu.Unlock()
	if d.mv.next >= 0 && d.r.Offset >= d.mv.next {
		d.mv.done[d.r.Offset] = true
	}
	return nil
}

// waitHeap orders the records waiting by due time.
type waitHeap []*delayed

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)        { *h = append(*h, x.(*delayed)) }
func (h *waitHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
