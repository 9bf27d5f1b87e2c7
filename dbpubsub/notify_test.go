package dbpubsub

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
)

// Under a steady stream of marks the notifier spaces its rounds (one
// NOTIFY each) out: its spacing grows from notifySpacing towards
// maxNotifySpacing while the marks keep coming. A round takes at most
// maxNotifyMarks marks, so a fast machine's stream (a million marks in
// 300 ms) takes over a hundred rounds, spread over the seconds after it;
// how far the spacing grows depends on the scheduler. So the test bounds
// what holds on any machine: over the whole run, from the first mark to
// the last notification, at most one round per 2*notifySpacing, which a
// pacer that never grew its spacing would exceed.
func TestNotifierSpacesRoundsUnderAStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := New(db, Options{NoListen: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ch := channelName("stream", "t")

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	end := start.Add(300 * time.Millisecond)
	marks := 0
	for time.Now().Before(end) {
		ps.s.notifyLater(ch)
		marks++
		runtime.Gosched()
	}
	time.Sleep(2 * maxNotifySpacing) // the last round
	rounds := 0
	for {
		wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := conn.WaitForNotification(wctx)
		wcancel()
		if err != nil {
			break
		}
		rounds++
	}
	elapsed := time.Since(start)
	t.Logf("%d marks, %d rounds in %v", marks, rounds, elapsed)
	if rounds == 0 {
		t.Fatal("no notification at all")
	}
	if limit := int(elapsed/notifySpacing) / 2; rounds > limit {
		t.Fatalf("%d rounds for a stream of %d marks over %v, want at most %d (half of one per %v)", rounds, marks, elapsed, limit, notifySpacing)
	}
}
