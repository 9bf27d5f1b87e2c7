package dbpubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// One Rescue call handles every expired lease, also when whole batches of
// them end up dead rather than pending.
func TestRescueHandlesEveryExpiredLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	ps := newPubSub(t, db, dbpubsub.Options{Lease: time.Hour, Retry: pubsub.RetryPolicy{MaxAttempts: 1}})
	// Rows left by a process that died: 2,500 on their last attempt, 10
	// with attempts left (enqueued last, so rescued last).
	if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data, status, attempts, lease_until)
		SELECT 't', '\x00', 'processing', 1, now() - interval '1 minute' + g * interval '1 ms' FROM generate_series(1, 2500) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO conveyor_events (topic, data, status, attempts, lease_until)
		SELECT 'u', '\x00', 'processing', 0, now() - interval '1 s' FROM generate_series(1, 10)`); err != nil {
		t.Fatal(err)
	}
	topics, err := ps.Rescue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0] != "u" {
		t.Fatalf("Rescue returned topics %q, want [u] (only u got messages back)", topics)
	}
	if n := countRows(t, db, "status = 'processing'"); n != 0 {
		t.Fatalf("%d rows still processing after one Rescue, want 0", n)
	}
	if n := countRows(t, db, "status = 'dead' AND last_error = 'lease expired'"); n != 2500 {
		t.Fatalf("%d rows dead with the reason, want 2500", n)
	}
	if n := countRows(t, db, "status = 'pending'"); n != 10 {
		t.Fatalf("%d rows pending, want 10", n)
	}
}
