package dbpubsub_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// idsAndData returns the ids and payloads of topic's messages in id order.
func idsAndData(t *testing.T, db *bun.DB, topic string) ([]int64, []string) {
	t.Helper()
	rows, err := db.DB.QueryContext(context.Background(),
		`SELECT id, data FROM conveyor_events_all WHERE topic = $1 ORDER BY id`, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	var data []string
	for rows.Next() {
		var id int64
		var d []byte
		if err := rows.Scan(&id, &d); err != nil {
			t.Fatal(err)
		}
		ids, data = append(ids, id), append(data, string(d))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, data
}

func numbered(prefix string, n int) ([][]byte, []string) {
	batch, want := make([][]byte, n), make([]string, n)
	for i := range batch {
		want[i] = fmt.Sprintf("%s-%d", prefix, i)
		batch[i] = []byte(want[i])
	}
	return batch, want
}

// A batch of up to a block's size (1024 since migration 0004) takes the
// consecutive ids of one block, in the order given, outside and inside a
// caller's transaction; a bigger batch takes one id per row, in order.
func TestBatchIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var inc int64
	if err := db.QueryRowContext(ctx, `SELECT seqincrement FROM pg_sequence
		WHERE seqrelid = pg_get_serial_sequence('conveyor_events', 'id')::regclass`).Scan(&inc); err != nil {
		t.Fatal(err)
	}
	if inc != 1024 {
		t.Fatalf("the id sequence's increment is %d after the migrations, want 1024", inc)
	}
	ps := newPubSub(t, db, dbpubsub.Options{})
	for _, tc := range []struct {
		name        string
		n           int
		consecutive bool
		enqueue     func(tp pubsub.Topic, batch [][]byte) error
	}{
		{"100", 100, true, func(tp pubsub.Topic, b [][]byte) error { return pubsub.EnqueueBatch(ctx, tp, b) }},
		{"1024", 1024, true, func(tp pubsub.Topic, b [][]byte) error { return pubsub.EnqueueBatch(ctx, tp, b) }},
		{"1025", 1025, false, func(tp pubsub.Topic, b [][]byte) error { return pubsub.EnqueueBatch(ctx, tp, b) }},
		{"100 in a transaction", 100, true, func(tp pubsub.Topic, b [][]byte) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return pubsub.EnqueueBatch(dbpubsub.WithTx(ctx, tx), tp, b)
			})
		}},
		{"1025 in a transaction", 1025, false, func(tp pubsub.Topic, b [][]byte) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return pubsub.EnqueueBatch(dbpubsub.WithTx(ctx, tx), tp, b)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "ids " + tc.name
			batch, want := numbered(topic, tc.n)
			if err := tc.enqueue(ps.Topic(topic), batch); err != nil {
				t.Fatal(err)
			}
			ids, got := idsAndData(t, db, topic)
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows in id order, want the %d of the batch in its order", len(got), len(want))
			}
			if consecutive := ids[len(ids)-1]-ids[0] == int64(len(ids)-1); consecutive != tc.consecutive {
				t.Errorf("ids %d to %d for %d rows: consecutive %v, want %v", ids[0], ids[len(ids)-1], len(ids), consecutive, tc.consecutive)
			}
		})
	}
}

// Batches enqueued at once on several topics never share an id: on a
// schema whose id sequence hands out blocks (migration 0004), and on one
// whose sequence hands out one id per nextval (as before 0004, or after its
// down migration), where a batch must not take a block.
func TestConcurrentBatchesGetDistinctIDs(t *testing.T) {
	t.Parallel()
	for _, inc := range []int{1024, 1} {
		t.Run(fmt.Sprintf("increment %d", inc), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, db := newStore(t)
			if _, err := db.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE conveyor_events ALTER COLUMN id SET INCREMENT BY %d`, inc)); err != nil {
				t.Fatal(err)
			}
			ps := newPubSub(t, db, dbpubsub.Options{})
			const producers, batches, size = 8, 10, 50
			var wg sync.WaitGroup
			errs := make(chan error, producers*batches)
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tp := ps.Topic(fmt.Sprintf("topic %d", p%2))
					for b := range batches {
						batch, _ := numbered(fmt.Sprintf("p%d b%d", p, b), size)
						errs <- pubsub.EnqueueBatch(ctx, tp, batch)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			var rows, distinct int
			if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT id) FROM conveyor_events_all`).Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if rows != producers*batches*size || distinct != rows {
				t.Errorf("%d rows with %d distinct ids, want %d rows, each with its own id", rows, distinct, producers*batches*size)
			}
		})
	}
}
