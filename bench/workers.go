package main

import (
	"context"
	"errors"
	"sync"
)

// startWorkers runs loop in w goroutines until ctx ends; stop waits for
// them and returns the first error other than ctx's.
func startWorkers(ctx context.Context, w int, loop func(ctx context.Context) error) func() error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	return func() error {
		wg.Wait()
		return first
	}
}
