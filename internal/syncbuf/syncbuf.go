// Package syncbuf is a byte buffer safe for concurrent writers and a
// reader: the log and process-output destination of conveyor's tests.
//
//	var logs syncbuf.Buffer
//	logger := slog.New(slog.NewTextHandler(&logs, nil))
//	// ... run things that log from several goroutines ...
//	if !strings.Contains(logs.String(), "want") { ... }
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer guarded by a mutex. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Tail returns the last n bytes written, preceded by "…" when cut: for
// failure messages about long outputs.
func (b *Buffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
