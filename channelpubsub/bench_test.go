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
	const producers, consumers, rounds = 8, 8, 10
	ctx := context.Background()
	payload := []byte("a small message of 32 bytes ....")

	rawCh := make(chan []byte, channelpubsub.DefaultCapacity)
	rawSend := func() { rawCh <- append([]byte(nil), payload...) } // a copy, as Enqueue makes
	rawRecv := func() { <-rawCh }

	ps := channelpubsub.New()
	defer ps.Close()
	tp := ps.Topic("bench")
	send := func() {
		if err := tp.Enqueue(ctx, payload); err != nil {
			b.Error(err)
		}
	}
	recv := func() {
		m, err := tp.Dequeue(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			b.Error(err)
		}
	}

	// The two alternate in rounds, so that load from elsewhere on the
	// machine weighs on both alike.
	var raw, ours time.Duration
	b.ResetTimer()
	for r := range rounds {
		n := b.N / rounds
		if r == 0 {
			n += b.N % rounds
		}
		raw += timeIt(n, producers, consumers, rawSend, rawRecv)
		ours += timeIt(n, producers, consumers, send, recv)
	}
	b.StopTimer()

	rawRate := float64(b.N) / raw.Seconds()
	ourRate := float64(b.N) / ours.Seconds()
	b.ReportMetric(ourRate, "msgs/s")
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(ourRate/rawRate, "ratio")
}

// timeIt runs n messages through send and recv, split over producers and
// consumers, and returns the wall time.
func timeIt(n, producers, consumers int, send, recv func()) time.Duration {
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
