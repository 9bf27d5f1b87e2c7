package dashboard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// maxSampled bounds the subscriptions the sampler reads each round, so a
// deployment with very many costs a bounded number of calls.
const maxSampled = 200

// sample is one reading of a subscription's counts.
type sample struct {
	at    time.Time
	stats admin.Stats
	// acked is how many messages were acked since the previous sample,
	// -1 when the backend cannot say (no admin.AckCounter) or for the
	// first sample.
	acked int64
}

// sampler reads every shown subscription's Stats and acks every
// Options.SampleInterval and keeps Options.History of them, for the
// charts. It owns its goroutine: stop ends and waits for it.
type sampler struct {
	d      *Dashboard
	keep   int // samples kept per subscription
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	series map[target][]sample // oldest first
}

func startSampler(d *Dashboard) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{d: d, keep: int(d.opts.History/d.opts.SampleInterval) + 1, cancel: cancel,
		done: make(chan struct{}), series: map[target][]sample{}}
	go s.run(ctx)
	return s
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

func (s *sampler) run(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(s.d.opts.SampleInterval)
	defer tick.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// round takes one sample of every shown subscription. A subscription
// that is no longer shown loses its series.
func (s *sampler) round(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, s.d.opts.Timeout)
	ts, err := s.d.topics(cctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.d.log.WarnContext(ctx, "dashboard: sampler cannot list topics", "error", err)
		}
		return
	}
	seen := map[target]bool{}
	for _, ti := range ts {
		for _, sub := range ti.Subscriptions {
			if len(seen) == maxSampled || ctx.Err() != nil {
				break
			}
			tg := target{Topic: ti.Name, Sub: sub}
			seen[tg] = true
			s.sampleOne(ctx, tg)
		}
	}
	s.mu.Lock()
	for tg := range s.series {
		if !seen[tg] {
			delete(s.series, tg)
		}
	}
	s.mu.Unlock()
}

func (s *sampler) sampleOne(ctx context.Context, tg target) {
	ctx, cancel := context.WithTimeout(ctx, s.d.opts.Timeout)
	defer cancel()
	t, err := s.d.listed(ctx, tg)
	if err != nil {
		return
	}
	defer t.Close()
	st, err := admin.TopicStats(ctx, t)
	if err != nil {
		if !errors.Is(err, pubsub.ErrUnsupported) && ctx.Err() == nil {
			s.d.log.WarnContext(ctx, "dashboard: sampler cannot read stats", "topic", tg.Topic, "subscription", tg.Sub, "error", err)
		}
		return
	}
	now := time.Now()
	smp := sample{at: now, stats: st, acked: -1}
	s.mu.Lock()
	prev := s.series[tg]
	s.mu.Unlock()
	if len(prev) > 0 {
		if n, err := admin.AckedSince(ctx, t, prev[len(prev)-1].at); err == nil {
			smp.acked = n
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ser := append(s.series[tg], smp)
	if len(ser) > s.keep {
		ser = append(ser[:0], ser[len(ser)-s.keep:]...)
	}
	s.series[tg] = ser
}

// chart returns the chart of tg's samples, nil when there are fewer than
// two.
func (s *sampler) chart(tg target) *chart {
	s.mu.Lock()
	ser := append([]sample(nil), s.series[tg]...)
	s.mu.Unlock()
	return newChart(ser, s.d.opts.History)
}
