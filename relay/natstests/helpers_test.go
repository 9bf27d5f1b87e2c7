package relay_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/relay"
)

// patience bounds every wait for something that should happen.
const patience = 30 * time.Second

// quiet drops the logs of the expected failures.
var quiet = slog.New(slog.DiscardHandler)

var errRollback = errors.New("rolled back on purpose")

// produced are the payloads a producer committed and rolled back.
type produced struct {
	committed, rolledBack []string
}

// produce enqueues n payloads "prefix-i" on src in transactions of perTx
// messages each, rolling back every fifth transaction.
func produce(t testing.TB, db *bun.DB, src pubsub.Topic, prefix string, n, perTx int) produced {
	t.Helper()
	p, err := tryProduce(db, src, prefix, n, perTx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryProduce is produce, for another goroutine than the test's.
func tryProduce(db *bun.DB, src pubsub.Topic, prefix string, n, perTx int) (produced, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var p produced
	for first, tx := 0, 0; first < n; first, tx = first+perTx, tx+1 {
		var batch []string
		for i := first; i < min(first+perTx, n); i++ {
			batch = append(batch, fmt.Sprintf("%s-%d", prefix, i))
		}
		rollback := tx%5 == 4
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, d := range batch {
				if err := src.Enqueue(dbpubsub.WithTx(ctx, tx), []byte(d)); err != nil {
					return err
				}
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		switch {
		case rollback && errors.Is(err, errRollback):
			p.rolledBack = append(p.rolledBack, batch...)
		case err == nil:
			p.committed = append(p.committed, batch...)
		default:
			return p, fmt.Errorf("producer transaction %d: %w", tx, err)
		}
	}
	return p, nil
}

// drain dequeues and acks want messages of dst, then checks that dst
// keeps no other, and returns how many times each payload came.
func drain(t testing.TB, dst pubsub.Topic, want int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range want {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		m, err := dst.Dequeue(ctx)
		if err != nil {
			cancel()
			t.Fatalf("after %d of %d messages of the destination: Dequeue: %v", len(got), want, err)
		}
		got[string(m.Data())]++
		if err := m.Ack(ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	// An Ack may return before the server counts it (natspubsub without
	// ConfirmAck): wait until nothing is in hand.
	var s admin.Stats
	waitFor(t, "the destination's acks counted", func() bool {
		var err error
		if s, err = admin.TopicStats(ctx, dst); err != nil {
			t.Fatalf("destination stats: %v", err)
		}
		return s.Processing == 0
	})
	if left := s.Ready + s.Scheduled + s.Processing + s.Dead; left != 0 {
		t.Errorf("the destination keeps %d messages beyond the %d expected (%+v)", left, want, s)
		for range s.Ready { // counted as well
			m, err := dst.Dequeue(ctx)
			if err != nil {
				t.Fatalf("Dequeue of the messages beyond those expected: %v", err)
			}
			got[string(m.Data())]++
			_ = m.Ack(ctx)
		}
	}
	return got
}

// checkExactlyOnce fails t unless got has each committed payload once
// and no rolled-back one (drain's result).
func checkExactlyOnce(t testing.TB, p produced, got map[string]int) {
	t.Helper()
	missing, twice := 0, 0
	for _, d := range p.committed {
		switch n := got[d]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
	}
	rolledBack := 0
	for _, d := range p.rolledBack {
		rolledBack += got[d]
	}
	if missing != 0 || twice != 0 || rolledBack != 0 {
		t.Errorf("of %d committed messages %d never arrived and %d arrived more than once; %d copies of rolled-back ones arrived",
			len(p.committed), missing, twice, rolledBack)
	}
}

// runRelay runs r until the test ends (or r stops by itself), and fails
// the test if Run returns an error it did not expect.
func runRelay(t testing.TB, r *relay.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitFor polls cond every 20 ms until it holds, or fails t.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", patience, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
