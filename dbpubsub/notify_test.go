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

// Under a steady stream of marks the notifier spaces its rounds out to
// maxNotifySpacing: marks made without pause for 300 ms make at most about
// 300 ms / maxNotifySpacing rounds (one NOTIFY each), where one round per
// notifySpacing would make up to 300. A slow machine makes fewer rounds.
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

	end := time.Now().Add(300 * time.Millisecond)
	marks := 0
	for time.Now().Before(end) {
		ps.notifyLater(ch)
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
	t.Logf("%d marks, %d rounds", marks, rounds)
	if rounds == 0 {
		t.Fatal("no notification at all")
	}
	if limit := int(300*time.Millisecond/maxNotifySpacing) + 15; rounds > limit {
		t.Fatalf("%d rounds for a stream of %d marks over 300 ms, want at most %d", rounds, marks, limit)
	}
}
