package reliability

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// logCounter is a slog.Handler that counts the records by message, so
// that a fault test can say which of the expected warnings it saw and how
// often, without printing every one.
type logCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func newLogCounter() *logCounter { return &logCounter{n: map[string]int{}} }

func (c *logCounter) logger() *slog.Logger { return slog.New(c) }

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[r.Level.String()+" "+r.Message]++
	return nil
}

func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler { return c }

func (c *logCounter) WithGroup(string) slog.Handler { return c }

// String lists the messages seen, most frequent first.
func (c *logCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.n))
	for k := range c.n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.n[b] - c.n[a] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %6d× %s", c.n[k], k)
	}
	return b.String()
}
