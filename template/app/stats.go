package main

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/event"
)

// Stats counts the events handled and failed, by type. The event service
// reports every delivery to Observe (event.Observe middleware); GET /stats
// shows the counts.
type Stats struct {
	mu      sync.Mutex
	handled map[event.EventType]int64
	failed  map[event.EventType]int64
}

// NewStats returns zero counts.
func NewStats() *Stats {
	return &Stats{handled: map[event.EventType]int64{}, failed: map[event.EventType]int64{}}
}

// Observe counts one delivery: handled when err is nil, failed otherwise
// (the event will be retried, or is dead if err is permanent).
func (s *Stats) Observe(_ context.Context, m event.Metadata, _ time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.handled[m.Type]++
	} else {
		s.failed[m.Type]++
	}
}

// Counts returns copies of the counts.
func (s *Stats) Counts() (handled, failed map[event.EventType]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.handled), maps.Clone(s.failed)
}
