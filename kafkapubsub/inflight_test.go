package kafkapubsub

import (
	"testing"
)

// markOf returns the mark marks gives topic's partition p, -1 if none.
func markOf(marks map[string]map[int32]int64, topic string, p int32) int64 {
	if o, ok := marks[topic][p]; ok {
		return o
	}
	return -1
}

// pendingMarks is tr.marks(nil) as plain offsets.
func pendingMarks(tr *tracker) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for topic, ps := range tr.marks(nil) {
		out[topic] = map[int32]int64{}
		for p, o := range ps {
			out[topic][p] = o.Offset
		}
	}
	return out
}

// Records settled out of order move the mark only over a contiguous run
// of settled ones.
func TestTrackerCommitsOnlyContiguous(t *testing.T) {
	tr := newTracker()
	tr.assign(map[string][]int32{"log": {0}})
	var parts []*partition
	for off := int64(10); off < 15; off++ {
		parts = append(parts, tr.fetched("log", 0, off))
	}
	p := parts[0]
	if got := markOf(pendingMarks(tr), "log", 0); got != 10 {
		t.Fatalf("mark with nothing settled: %d, want 10", got)
	}
	for _, off := range []int64{12, 14, 11} { // out of order, 10 still unsettled
		if !tr.settle(p, off) {
			t.Fatalf("settle %d: partition reported revoked", off)
		}
		if got := markOf(pendingMarks(tr), "log", 0); got != 10 {
			t.Fatalf("mark after settling %d with 10 unsettled: %d, want 10", off, got)
		}
	}
	tr.settle(p, 10) // 10, 11, 12 contiguous; 13 not
	if got := markOf(pendingMarks(tr), "log", 0); got != 13 {
		t.Fatalf("mark after settling 10: %d, want 13", got)
	}
	tr.committed(tr.marks(nil))
	if got := markOf(pendingMarks(tr), "log", 0); got != -1 {
		t.Fatalf("mark 13 offered again after its commit: %d", got)
	}
	tr.settle(p, 13) // 14 was settled already: everything fetched is
	if got := markOf(pendingMarks(tr), "log", 0); got != 15 {
		t.Fatalf("mark with all settled: %d, want 15 (after the last fetched)", got)
	}
}

// A gap in the offsets (a transaction's marker, an aborted record) does
// not hold the mark back.
func TestTrackerSkipsOffsetGaps(t *testing.T) {
	tr := newTracker()
	tr.assign(map[string][]int32{"log": {0}})
	p := tr.fetched("log", 0, 3)
	tr.fetched("log", 0, 7)
	tr.settle(p, 7)
	if got := markOf(pendingMarks(tr), "log", 0); got != 3 {
		t.Fatalf("mark: %d, want 3", got)
	}
	tr.settle(p, 3)
	if got := markOf(pendingMarks(tr), "log", 0); got != 8 {
		t.Fatalf("mark: %d, want 8", got)
	}
}

// Partitions are tracked apart; a revoked one refuses settles and offers
// no mark, and marks can be asked for some partitions only.
func TestTrackerPartitionsAndRevoke(t *testing.T) {
	tr := newTracker()
	if tr.fetched("log", 0, 0) != nil {
		t.Fatal("a record of a partition not assigned was tracked")
	}
	tr.assign(map[string][]int32{"log": {0, 1}, "retry": {0}})
	a := tr.fetched("log", 0, 0)
	b := tr.fetched("log", 1, 5)
	r := tr.fetched("retry", 0, 2)
	tr.settle(b, 5)
	tr.settle(r, 2)
	only := tr.marks(map[string][]int32{"log": {1}})
	if len(only) != 1 || len(only["log"]) != 1 || only["log"][1].Offset != 6 {
		t.Fatalf("marks of log/1: %v, want log/1 at 6", only)
	}
	tr.revoke(map[string][]int32{"log": {0}})
	if tr.settle(a, 0) || tr.owned(a) {
		t.Fatal("settle of a revoked partition's record reported owned")
	}
	m := pendingMarks(tr)
	if markOf(m, "log", 0) != -1 || markOf(m, "log", 1) != 6 || markOf(m, "retry", 0) != 3 {
		t.Fatalf("marks after revoking log/0: %v, want log/1 at 6 and retry/0 at 3", m)
	}
	if tr.fetched("log", 0, 1) != nil {
		t.Fatal("a record of a revoked partition was tracked (a fetch that raced the revocation)")
	}
	// Owned again later: it starts afresh from what is fetched.
	tr.assign(map[string][]int32{"log": {0}})
	a2 := tr.fetched("log", 0, 0)
	if a2 == a || !tr.settle(a2, 0) || markOf(pendingMarks(tr), "log", 0) != 1 {
		t.Fatalf("partition owned again: marks %v, want log/0 at 1", pendingMarks(tr))
	}
	tr.revoke(nil)
	if len(tr.marks(nil)) != 0 || tr.owned(b) || tr.fetched("retry", 0, 3) != nil {
		t.Fatal("revoking all left a partition owned")
	}
}
