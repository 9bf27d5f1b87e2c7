package main

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/event"
)

// Stats counts the events handled and failed, by subscription (one per
// event service) and type. The event services report every delivery to
// Observe (event.Observe middleware); GET /stats shows the counts.
type Stats struct {
	mu      sync.Mutex
	handled Counts
	failed  Counts
}

// Counts are numbers of events by subscription, then type.
type Counts map[string]map[event.EventType]int64

func (c Counts) add(sub string, typ event.EventType) {
	if c[sub] == nil {
		c[sub] = map[event.EventType]int64{}
	}
	c[sub][typ]++
}

func (c Counts) clone() Counts {
	out := make(Counts, len(c))
	for sub, byType := range c {
		out[sub] = maps.Clone(byType)
	}
	return out
}

// NewStats returns zero counts.
func NewStats() *Stats {
	return &Stats{handled: Counts{}, failed: Counts{}}
}

// Observe counts one delivery: handled when err is nil, failed otherwise
// (the event will be retried, or is dead if err is permanent).
func (s *Stats) Observe(_ context.Context, m event.Metadata, _ time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.handled.add(m.Subscription, m.Type)
	} else {
		s.failed.add(m.Subscription, m.Type)
	}
}

// Counts returns copies of the counts.
func (s *Stats) Counts() (handled, failed Counts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handled.clone(), s.failed.clone()
}
