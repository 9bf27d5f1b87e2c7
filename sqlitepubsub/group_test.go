package sqlitepubsub_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// TestGroupCommitOutcomes: concurrent enqueues share commits, some of them
// with a ctx that ends while they wait for their group. Each that returned
// nil is in the file, each that returned an error is not (it wraps ctx's
// error); then concurrent consumers get every message once.
func TestGroupCommitOutcomes(t *testing.T) {
	ps := openFile(t, filepath.Join(t.TempDir(), "group.db"))
	topic := ps.Topic("t")
	ctx := context.Background()
	if err := ps.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const producers, each = 32, 20
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				cctx, cancel := context.WithTimeout(ctx, time.Duration((p*each+i)%7)*2*time.Millisecond)
				err := topic.Enqueue(cctx, []byte("m"))
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					failed.Add(1)
				default:
					t.Errorf("Enqueue: %v, want nil or one wrapping context.DeadlineExceeded", err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d enqueues returned nil, %d their ctx's error", ok.Load(), failed.Load())
	if failed.Load() == 0 {
		t.Error("no enqueue returned its ctx's error, though a seventh of them had a ctx ended at the call")
	}
	st, err := admin.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != ok.Load() {
		t.Fatalf("%d ready, want the %d enqueues that returned nil", st.Ready, ok.Load())
	}

	// The consumers' claims share statements: each message once.
	var got sync.Map
	var left atomic.Int64
	left.Store(ok.Load())
	for range 16 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				m, err := topic.Dequeue(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if _, dup := got.LoadOrStore(m.ID(), true); dup {
					t.Errorf("message %s delivered twice", m.ID())
				}
				if err := m.Ack(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st, err = admin.TopicStats(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if st.Ready != 0 || st.Processing != 0 {
		t.Fatalf("after the drain: %+v, want nothing ready or processing", st)
	}
}

// TestGroupCommitFull: concurrent enqueues into a file that cannot grow
// (max_page_count): those that did not fit fail with ErrFull, and with
// them any that shared their group's transaction when SQLite rolled it
// back; each that returned nil is in the file, and nothing else.
func TestGroupCommitFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	sqldb, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=max_page_count(96)")
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	t.Cleanup(func() { _ = db.Close() })
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx := context.Background()
	topic := ps.Topic("t")
	var ok, full atomic.Int64
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 30 {
				// Sizes vary, so that a small one may fit after a large
				// one did not.
				err := topic.Enqueue(ctx, bytes.Repeat([]byte("d"), 1_000+((p+i)%5)*6_000))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, sqlitepubsub.ErrFull):
					full.Add(1)
				default:
					t.Errorf("Enqueue: %v, want nil or ErrFull", err)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d enqueues returned nil, %d ErrFull", ok.Load(), full.Load())
	if full.Load() == 0 {
		t.Fatal("no enqueue found the file full: the test filled too little")
	}
	st, err := admin.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != ok.Load() {
		t.Fatalf("%d ready, want the %d enqueues that returned nil", st.Ready, ok.Load())
	}
}
