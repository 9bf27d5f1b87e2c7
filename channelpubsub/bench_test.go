package channelpubsub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
)

// BenchmarkRoundTrip measures 8 producers and 8 consumers doing enqueue →
// dequeue → ack on one topic, beside a raw buffered Go channel of the same
// capacity doing send → receive, both timed in the same run. It reports
// both rates and their ratio (channelpubsub / raw).
func BenchmarkRoundTrip(b *testing.B) {
	const producers, consumers = 8, 8
	ctx := context.Background()
	payload := []byte("a small message of 32 bytes ....")

	raw := timeIt(b.N, producers, consumers, func() (func(), func() bool) {
		ch := make(chan []byte, channelpubsub.DefaultCapacity)
		send := func() { ch <- append([]byte(nil), payload...) } // a copy, as Enqueue makes
		recv := func() bool { _, ok := <-ch; return ok }
		return send, recv
	})

	ps := channelpubsub.New()
	defer ps.Close()
	tp := ps.Topic("bench")
	b.ResetTimer()
	ours := timeIt(b.N, producers, consumers, func() (func(), func() bool) {
		send := func() {
			if err := tp.Enqueue(ctx, payload); err != nil {
				b.Error(err)
			}
		}
		recv := func() bool {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				b.Error(err)
				return false
			}
			if err := m.Ack(ctx); err != nil {
				b.Error(err)
			}
			return true
		}
		return send, recv
	})
	b.StopTimer()

	rawRate := float64(b.N) / raw.Seconds()
	ourRate := float64(b.N) / ours.Seconds()
	b.ReportMetric(ourRate, "msgs/s")
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(ourRate/rawRate, "ratio")
}

// timeIt runs n messages through the send and receive functions that setup
// returns, split over producers and consumers, and returns the wall time.
func timeIt(n, producers, consumers int, setup func() (send func(), recv func() bool)) time.Duration {
	send, recv := setup()
	start := time.Now()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += producers {
				send()
			}
		}()
	}
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += consumers {
				recv()
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}
