package kafkapubsub_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A batch the cluster refuses part of is aborted whole: the subscription
// never sees the items the cluster took. The log's max.message.bytes is
// lowered behind the PubSub's back (it read the limit when the topic was
// made), so that the cluster, not conveyor's own check, refuses one item
// of a batch, after the items before it were sent in its transaction.
func TestBatchAllOrNone(t *testing.T) {
	for _, groups := range []bool{false, true} {
		name := "ShareGroups"
		if groups {
			name = "ConsumerGroups"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			brokers := kafkapubsubtest.Brokers(t)
			opts := kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), ConsumerGroups: groups}
			ps := openGroup(t, opts)
			tp := topicOf(t, ps, "atomic")
			ctx := context.Background()
			if err := tp.Enqueue(ctx, []byte("before")); err != nil {
				t.Fatal(err)
			}
			adm := kadm.NewClient(newClient(t, brokers))
			limit := "4096"
			altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &limit}}, ps.LogTopic("atomic"))
			if err == nil {
				_, err = altered.On(ps.LogTopic("atomic"), nil)
			}
			if err != nil {
				t.Fatalf("lowering the log's max.message.bytes: %v", err)
			}
			big := make([]byte, 8192) // random: it does not compress below the limit
			_, _ = rand.Read(big)
			batch := [][]byte{[]byte("taken 1"), []byte("taken 2"), big, []byte("after the refused one")}
			err = pubsub.EnqueueBatch(ctx, tp, batch)
			if !errors.Is(err, pubsub.ErrTooLarge) {
				t.Fatalf("EnqueueBatch with an item the cluster refuses: %v, want an error wrapping pubsub.ErrTooLarge", err)
			}
			if err := tp.Enqueue(ctx, []byte("after")); err != nil {
				t.Fatal(err)
			}
			// One partition: the order of enqueue, the aborted records
			// skipped.
			for _, want := range []string{"before", "after"} {
				m := take(t, tp)
				if string(m.Data()) != want {
					t.Fatalf("delivered %q, want %q: an item of the refused batch was delivered", m.Data(), want)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// A batch that fits is delivered whole, in order.
			if err := pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("one"), []byte("two"), []byte("three")}); err != nil {
				t.Fatalf("EnqueueBatch after a refused one: %v", err)
			}
			for _, want := range []string{"one", "two", "three"} {
				m := take(t, tp)
				if string(m.Data()) != want {
					t.Fatalf("delivered %q, want %q", m.Data(), want)
				}
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
