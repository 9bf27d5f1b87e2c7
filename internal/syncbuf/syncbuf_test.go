package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	if got := b.Tail(4); !strings.HasPrefix(got, "…") || len(got) != len("…")+4 {
		t.Fatalf("Tail(4) = %q", got)
	}
}
