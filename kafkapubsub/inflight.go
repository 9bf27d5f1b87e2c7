package kafkapubsub

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// In consumer-group mode (Options.ConsumerGroups) a group commits one
// offset per partition, while conveyor settles each message on its own,
// in any order. The tracker keeps, for each partition this member owns,
// the offsets it fetched and has not settled: the offset it may commit,
// its low-water mark, is the first of them, or, with none, the one after
// the last fetched. A record settled above an unsettled one is committed
// only once every record below it is settled too; a member that goes
// away before then leaves it to the next owner, which delivers it again
// (at least once), as Confluent's parallel-consumer and Spring Kafka's
// async acks do.

// tracker is the records in flight of each partition a group member owns.
type tracker struct {
	mu    sync.Mutex
	owns  map[topicPartition]bool // assigned and not revoked
	parts map[topicPartition]*partition
}

// topicPartition names one partition of a Kafka topic.
type topicPartition struct {
	topic     string
	partition int32
}

// partition is the records in flight of one partition, for as long as the
// member owns it.
type partition struct {
	tp        topicPartition
	pending   []int64        // fetched, in order, from the first unsettled on
	settled   map[int64]bool // settled offsets of pending, above its first
	high      int64          // the offset after the last fetched; -1: none
	committed int64          // the last mark committed; -1: none
	revoked   bool           // no longer owned: its records are not ours
}

func newTracker() *tracker {
	return &tracker{owns: map[topicPartition]bool{}, parts: map[topicPartition]*partition{}}
}

// assign notes the partitions of got owned (the group assigns them before
// they are fetched).
func (t *tracker) assign(got map[string][]int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for topic, ps := range got {
		for _, p := range ps {
			t.owns[topicPartition{topic, p}] = true
		}
	}
}

// fetched notes the record at offset of topic's partition p as in flight
// and returns its partition's state; nil when the partition is not owned
// (a fetch that raced its revocation: the record is another member's).
func (t *tracker) fetched(topic string, p int32, offset int64) *partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	tp := topicPartition{topic, p}
	if !t.owns[tp] {
		return nil
	}
	part := t.parts[tp]
	if part == nil {
		part = &partition{tp: tp, settled: map[int64]bool{}, high: -1, committed: -1}
		t.parts[tp] = part
	}
	part.pending = append(part.pending, offset)
	part.high = offset + 1
	return part
}

// settle notes the record at offset of part settled; it reports false
// when part is no longer owned (it was revoked: the record is another
// member's to deliver again).
func (t *tracker) settle(part *partition, offset int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if part.revoked {
		return false
	}
	part.settled[offset] = true
	for len(part.pending) > 0 && part.settled[part.pending[0]] {
		delete(part.settled, part.pending[0])
		part.pending = part.pending[1:]
	}
	return true
}

// owned reports whether part is still owned.
func (t *tracker) owned(part *partition) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !part.revoked
}

// mark is part's low-water mark: the first offset not settled, or the one
// after the last fetched; -1 with none fetched. Called with t.mu held.
func (part *partition) mark() int64 {
	if len(part.pending) > 0 {
		return part.pending[0]
	}
	return part.high
}

// marks returns the low-water mark of each owned partition (or, with
// only, of the partitions of only) that moved past its last commit.
func (t *tracker) marks(only map[string][]int32) map[string]map[int32]kgo.EpochOffset {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]map[int32]kgo.EpochOffset{}
	add := func(part *partition) {
		if m := part.mark(); m > part.committed {
			if out[part.tp.topic] == nil {
				out[part.tp.topic] = map[int32]kgo.EpochOffset{}
			}
			out[part.tp.topic][part.tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: m}
		}
	}
	if only == nil {
		for _, part := range t.parts {
			add(part)
		}
		return out
	}
	for topic, ps := range only {
		for _, p := range ps {
			if part := t.parts[topicPartition{topic, p}]; part != nil {
				add(part)
			}
		}
	}
	return out
}

// committed notes marks committed.
func (t *tracker) committed(marks map[string]map[int32]kgo.EpochOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for topic, ps := range marks {
		for p, o := range ps {
			if part := t.parts[topicPartition{topic, p}]; part != nil && o.Offset > part.committed {
				part.committed = o.Offset
			}
		}
	}
}

// revoke forgets the partitions of gone (all with nil): their records in
// flight are no longer this member's.
func (t *tracker) revoke(gone map[string][]int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	drop := func(tp topicPartition) {
		delete(t.owns, tp)
		if part := t.parts[tp]; part != nil {
			part.revoked = true
			delete(t.parts, tp)
		}
	}
	if gone == nil {
		for tp := range t.owns {
			drop(tp)
		}
		for tp := range t.parts {
			drop(tp)
		}
		return
	}
	for topic, ps := range gone {
		for _, p := range ps {
			drop(topicPartition{topic, p})
		}
	}
}
