// Package service gives every background loop of conveyor one shape: a
// Group owned by one component starts loops with Go, and its Stop asks
// them all to stop and waits until every one has returned. A component
// that must stop its loops in stages (say, consumers before the writers
// their last acks go to) owns one Group per stage and stops them in order.
//
//	g := service.NewGroup()
//	g.Go(func(stop <-chan struct{}) {
//		for {
//			select {
//			case <-tick.C:
//				work()
//			case <-stop:
//				return
//			}
//		}
//	})
//	...
//	g.Stop() // every loop has returned
package service

import (
	"context"
	"sync"
	"time"
)

// Group is a set of loops with one owner. The zero value is not ready: use
// NewGroup.
type Group struct {
	mu      sync.Mutex
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewGroup returns a Group that runs loops until Stop.
func NewGroup() *Group { return &Group{stop: make(chan struct{})} }

// Go runs loop in a goroutine of the group. loop must return soon after
// stop is closed. Once the group is stopping, Go starts nothing and
// reports false.
func (g *Group) Go(loop func(stop <-chan struct{})) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		loop(g.stop)
	}()
	return true
}

// Stopping is closed once Stop is called.
func (g *Group) Stopping() <-chan struct{} { return g.stop }

// IsStopping reports whether Stop was called.
func (g *Group) IsStopping() bool {
	select {
	case <-g.stop:
		return true
	default:
		return false
	}
}

// Stop asks every loop to stop and returns once all have returned. Later
// calls only wait.
func (g *Group) Stop() {
	g.mu.Lock()
	if !g.stopped {
		g.stopped = true
		close(g.stop)
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// Context returns a context canceled once stop is closed, for the loops
// whose calls take a ctx; cancel releases it.
func Context(stop <-chan struct{}) (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Sleep waits d or until stop is closed; it reports whether d passed.
func Sleep(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}
