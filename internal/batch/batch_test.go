package batch

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/internal/service"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Items added while a batch is handled go together into the next one, in
// order, and Wait returns once those added before it are handled.
func TestBatchesInOrderAndWait(t *testing.T) {
	g := service.NewGroup()
	defer g.Stop()
	var mu sync.Mutex
	var batches [][]int
	release := make(chan struct{})
	q := New(g, Options[int]{Lanes: 1, Max: 3, Handle: func(b []int) {
		if b[0] == 0 {
			<-release // the first batch is slow: the others queue up
		}
		mu.Lock()
		batches = append(batches, slices.Clone(b))
		mu.Unlock()
	}})
	for i := range 6 {
		tk, ok := q.Add(i, 0)
		if !ok {
			t.Fatal("Add refused")
		}
		for i == 0 && !taken(q, tk) {
			time.Sleep(time.Millisecond)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- q.Wait(context.Background()) }()
	select {
	case <-waited:
		t.Fatal("Wait returned before the items were handled")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][]int{{0}, {1, 2, 3}, {4, 5}}
	if !slices.EqualFunc(batches, want, slices.Equal[[]int]) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
}

func TestCancelAndLimit(t *testing.T) {
	g := service.NewGroup()
	defer g.Stop()
	var got []string
	var mu sync.Mutex
	hold := make(chan struct{})
	q := New(g, Options[string]{Lanes: 1, Max: 10, Handle: func(b []string) {
		if b[0] == "first" {
			<-hold
		}
		mu.Lock()
		got = append(got, b...)
		mu.Unlock()
	}})
	first, _ := q.Add("first", 0)
	for !taken(q, first) {
		time.Sleep(time.Millisecond)
	}
	q.Add("kept", 0)
	gone, _ := q.Add("gone", 0)
	if _, ok := q.Add("over", 2); ok {
		t.Fatal("Add over the limit was queued")
	}
	if q.Cancel(first) {
		t.Fatal("Cancel of an item a lane took reported true")
	}
	if !q.Cancel(gone) || q.Cancel(gone) {
		t.Fatal("Cancel of a waiting item: want true once")
	}
	close(hold)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"first", "kept"}) {
		t.Fatalf("handled %v, want first and kept", got)
	}
}

func taken[T any](q *Queue[T], t Ticket) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return uint64(t) < q.taken
}

func TestWaitHonoursContext(t *testing.T) {
	g := service.NewGroup()
	hold := make(chan struct{})
	q := New(g, Options[int]{Handle: func([]int) { <-hold }})
	q.Add(1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := q.Wait(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Wait = %v, want DeadlineExceeded", err)
	}
	close(hold)
	g.Stop()
}
