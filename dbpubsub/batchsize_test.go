package dbpubsub_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A batch whose data, in all, is over Options.MaxBatchSize is refused up
// front with pubsub.ErrTooLarge naming the limit, and enqueues nothing, in
// a caller's transaction or not; one item is bounded by MaxDataSize only.
func TestBatchOverMaxBatchSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{MaxBatchSize: 1000, MaxDataSize: 2000})
	tp := ps.Topic("big-batch")
	item := bytes.Repeat([]byte("x"), 400)
	batch := [][]byte{item, item, item} // 1,200 bytes
	for _, c := range []struct {
		name string
		ctx  func(tx bun.Tx) context.Context
	}{
		{"pool", func(bun.Tx) context.Context { return ctx }},
		{"caller's transaction", func(tx bun.Tx) context.Context { return dbpubsub.WithTx(ctx, tx) }},
	} {
		err := db.RunInTx(ctx, nil, func(_ context.Context, tx bun.Tx) error {
			return pubsub.EnqueueBatch(c.ctx(tx), tp, batch)
		})
		if !errors.Is(err, pubsub.ErrTooLarge) || !strings.Contains(err.Error(), "MaxBatchSize") {
			t.Errorf("%s: EnqueueBatch of 1,200 bytes: %v, want ErrTooLarge naming Options.MaxBatchSize", c.name, err)
		}
	}
	if n := countRows(t, db, "topic = 'big-batch'"); n != 0 {
		t.Fatalf("%d rows stored, want none", n)
	}
	if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{bytes.Repeat([]byte("y"), 1500)}); err != nil {
		t.Fatalf("a batch of one item of 1,500 bytes (MaxDataSize 2,000): %v", err)
	}
	if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{item, item}); err != nil {
		t.Fatalf("a batch of 800 bytes: %v", err)
	}
}
