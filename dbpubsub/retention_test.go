package dbpubsub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Prune deletes the dead rows that died longer than Options.DeadRetention
// ago, in batches until none is left, and keeps the younger ones, and the
// finished rows younger than Options.Retention; a negative DeadRetention
// keeps every dead row.
func TestPruneDeadRetention(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		deadRetention time.Duration
		wantOldDead   int // of 2,500 dead for 10 days
	}{
		{"Default", 0, 2500}, // 30 days
		{"OneDay", 24 * time.Hour, 0},
		{"Forever", -1, 2500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, db := newStore(t)
			ps := newPubSub(t, db, dbpubsub.Options{DeadRetention: c.deadRetention, PruneInterval: -1})
			// As dead rows are left by a rescue (2,500 of them: more than
			// one batch) and by a reject.
			if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data, status, attempts, finished_at, unique_key)
				SELECT 'old', '\x00', 'dead', 20, now() - interval '10 days', 'k' || g FROM generate_series(1, 2500) g`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data, status, attempts, finished_at)
				SELECT 'old', '\x00', 'finished', 1, now() - interval '1 hour' FROM generate_series(1, 5)`); err != nil {
				t.Fatal(err)
			}
			young := ps.Topic("young")
			if err := young.Enqueue(ctx, []byte("x")); err != nil {
				t.Fatal(err)
			}
			m := dequeueOne(t, young)
			if err := pubsub.Reject(ctx, m, fmt.Errorf("no")); err != nil {
				t.Fatal(err)
			}
			n, err := ps.Prune(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(2500 - c.wantOldDead); n != want {
				t.Errorf("Prune deleted %d rows, want %d", n, want)
			}
			if got := countRows(t, db, "topic = 'old' AND status = 'dead'"); got != c.wantOldDead {
				t.Errorf("%d dead rows 10 days old left, want %d", got, c.wantOldDead)
			}
			if got := countRows(t, db, "topic = 'young' AND status = 'dead'"); got != 1 {
				t.Errorf("%d dead rows just rejected left, want 1", got)
			}
			if got := countRows(t, db, "topic = 'old' AND status = 'finished'"); got != 5 {
				t.Errorf("%d finished rows an hour old left, want 5 (Retention is a day)", got)
			}
			if c.wantOldDead == 0 { // the unique keys went with them
				ok, err := pubsub.EnqueueUnique(ctx, ps.Topic("old"), "k1", []byte("again"))
				if err != nil || !ok {
					t.Errorf("EnqueueUnique of a pruned dead row's key = %v, %v; want true, nil", ok, err)
				}
			}
		})
	}
}
