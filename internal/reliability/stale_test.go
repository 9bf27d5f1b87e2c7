package reliability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

const staleMessages = 20

// Fault 5 (and 7 on the channel backend). A handler slower than its lease
// sees its message handed to another consumer; its late Ack and Nack
// return ErrLeaseExpired and leave the newer delivery alone, which then
// acks the message for good. 20 messages prove the point: each has one
// stale delivery and one current one.
func TestStaleSettle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const lease = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s := b.new(t, config{Lease: lease, Capacity: 64})
		tp := s.ps.Topic("stale")
		enqueueAll(t, tp, payloads("s", staleMessages))

		// The slow handler takes every message and sits on it past its lease.
		var slow []pubsub.Message
		for range staleMessages {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			slow = append(slow, m)
		}
		// The fast consumer gets them all again, once the leases run out.
		fresh := map[string]pubsub.Message{}
		start := time.Now()
		for range staleMessages {
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			if got := pubsub.Attempt(m); got != 2 {
				t.Errorf("redelivery of %s is attempt %d, want 2", m.Data(), got)
			}
			fresh[string(m.Data())] = m
		}
		if took := time.Since(start); took < lease*8/10 {
			t.Errorf("redelivered after %v, before the %v lease ran out", took, lease)
		}

		// The slow handler's late settles fail and change nothing.
		var wg sync.WaitGroup
		for i, m := range slow {
			wg.Add(1)
			go func() {
				defer wg.Done()
				settle, what := m.Ack, "Ack"
				if i%2 == 1 {
					settle, what = m.Nack, "Nack"
				}
				err := settle(ctx)
				if !errors.Is(err, pubsub.ErrLeaseExpired) {
					t.Errorf("late %s of %s: %v, want ErrLeaseExpired", what, m.Data(), err)
				} else if !strings.Contains(err.Error(), "lease expired") || !strings.Contains(err.Error(), m.ID()) {
					t.Errorf("late %s: %q does not say which message and why", what, err)
				}
				if err := pubsub.ExtendLease(ctx, m, lease); !errors.Is(err, pubsub.ErrLeaseExpired) {
					t.Errorf("late ExtendLease of %s: %v, want ErrLeaseExpired", m.Data(), err)
				}
			}()
		}
		wg.Wait()

		// The newer deliveries are untouched: they ack, once.
		acked, dup := 0, 0
		for d, m := range fresh {
			if err := m.Ack(ctx); err != nil {
				t.Errorf("Ack of the current delivery of %s after the stale settles: %v", d, err)
				continue
			}
			acked++
			dup++ // each message was delivered twice
		}
		// Nothing comes back: the stale Nacks did not requeue anything.
		ectx, ecancel := context.WithTimeout(ctx, 2*lease)
		m, err := tp.Dequeue(ectx)
		ecancel()
		if err == nil {
			t.Errorf("message %s delivered again after its current delivery was acked", m.Data())
		}
		st, err := admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready+st.Scheduled+st.Processing+st.Dead != 0 {
			t.Errorf("stats after the acks: %+v, want all zero", st)
		}
		result{fault: "stale settle (" + b.name + ")", messages: staleMessages, acked: acked, dead: int(st.Dead),
			duplicates: dup, note: fmt.Sprintf("every message delivered twice on purpose (lease %v); %d late Acks and %d late Nacks refused", lease, staleMessages/2, staleMessages/2)}.report(t)
	})
}

// Nack, retry and dead letters under load (fault 7 on both backends): 500
// messages, each nacked on its first delivery; those whose number ends in 0
// always fail and die after 3 attempts. Acked + dead = enqueued.
func TestNackAccounting(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const n = 500
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s := b.new(t, config{Lease: 5 * time.Second, Capacity: 1024,
			Retry: pubsub.RetryPolicy{MaxAttempts: 3, MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}})
		tp := s.ps.Topic("nack")
		data := payloads("n", n)
		enqueueAll(t, tp, data)
		cnt := newCounter()
		var mu sync.Mutex
		nacks := 0
		cctx, stop := context.WithCancel(ctx)
		wg := consumeUntil(cctx, tp, 8, func(m pubsub.Message) {
			cnt.deliver(m)
			if pubsub.Attempt(m) == 1 || strings.HasSuffix(string(m.Data()), "0") {
				if err := pubsub.Fail(cctx, m, errors.New("handler failed")); err != nil {
					t.Errorf("Fail: %v", err)
				}
				mu.Lock()
				nacks++
				mu.Unlock()
				return
			}
			if ackPersistently(cctx, m) {
				cnt.ack(m)
			}
		})
		for {
			st, err := admin.TopicStats(ctx, tp)
			if err != nil {
				t.Fatal(err)
			}
			if cnt.ackedCount()+int(st.Dead) >= n && st.Ready+st.Scheduled+st.Processing == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("not settled: %+v, %d acked", st, cnt.ackedCount())
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		wg.Wait()
		dead, err := admin.ListDead(ctx, tp, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dead {
			if !strings.HasSuffix(string(d.Data), "0") || d.Attempts != 3 || d.LastError != "handler failed" {
				t.Errorf("dead message %+v: want a payload ending in 0, 3 attempts, reason kept", d)
			}
		}
		acked, redeliveries, ackedTwice := cnt.tally()
		if ackedTwice != 0 || len(dead) != n/10 {
			t.Errorf("%d acked twice, %d dead: want 0 and %d", ackedTwice, len(dead), n/10)
		}
		result{fault: "nack and dead letters (" + b.name + ")", messages: n, acked: acked, dead: len(dead),
			duplicates: redeliveries, note: fmt.Sprintf("%d nacks on purpose; every redelivery follows a nack", nacks)}.report(t)
	})
}
