package dbpubsub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// BenchmarkInspect measures the calls an operations dashboard makes (issue
// 19: each page and `conveyor stats` within 100 ms) on a message table
// holding 1,000,000 finished and 10,000 dead rows of the topic, beside
// 10,000 ready and 1,000 scheduled messages, analyzed. It reports ns/op
// and ms/op; it asserts no time:
//
//	go test -run '^$' -bench Inspect -benchtime 200x ./dbpubsub/
func BenchmarkInspect(b *testing.B) {
	const (
		finished, dead, ready, scheduled = 1_000_000, 10_000, 10_000, 1_000
	)
	ctx := context.Background()
	_, db := newStore(b)
	ps := newPubSub(b, db, dbpubsub.Options{})
	tp := ps.Topic("bench")
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = []byte(fmt.Sprintf(`{"order":%d,"note":"a message of about sixty bytes, give or take"}`, i))
	}
	for range ready / len(batch) {
		if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
			b.Fatal(err)
		}
	}
	dbpubsubtest.AddHistory(b, db, "bench", finished, dead, scheduled)
	var someID string
	if p, err := admin.Peek(ctx, tp, admin.PeekOptions{State: admin.StateDead, Limit: 1}); err != nil || len(p.Messages) != 1 {
		b.Fatalf("Peek(dead) = %+v, %v", p, err)
	} else {
		someID = p.Messages[0].ID
	}
	// A cursor half-way through the dead rows: a deep page.
	var deep string
	for i := 0; i < 10; i++ {
		p, err := admin.Peek(ctx, tp, admin.PeekOptions{State: admin.StateDead, Limit: 500, After: deep})
		if err != nil {
			b.Fatal(err)
		}
		deep = p.Next
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Stats", func() error { _, err := admin.TopicStats(ctx, tp); return err }},
		{"ListTopics", func() error { _, err := admin.ListTopics(ctx, ps); return err }},
		{"PeekReady50", peekBench(ctx, tp, admin.StateReady, "")},
		{"PeekScheduled50", peekBench(ctx, tp, admin.StateScheduled, "")},
		{"PeekProcessing50", peekBench(ctx, tp, admin.StateProcessing, "")},
		{"PeekDead50", peekBench(ctx, tp, admin.StateDead, "")},
		{"PeekDead50Deep", peekBench(ctx, tp, admin.StateDead, deep)},
		{"MessageByID", func() error { _, _, err := admin.GetMessage(ctx, tp, someID); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			start := time.Now()
			for range b.N {
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ms(time.Since(start))/float64(b.N), "ms/op")
		})
	}
}

func peekBench(ctx context.Context, tp pubsub.Topic, state admin.MessageState, after string) func() error {
	return func() error {
		p, err := admin.Peek(ctx, tp, admin.PeekOptions{State: state, After: after})
		if err == nil && state != admin.StateProcessing && len(p.Messages) != admin.DefaultPeekLimit {
			err = fmt.Errorf("Peek(%s) listed %d messages, want %d", state, len(p.Messages), admin.DefaultPeekLimit)
		}
		return err
	}
}
