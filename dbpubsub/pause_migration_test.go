package dbpubsub

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/migrations"
)

// A schema without migration 0008 is reported as such, naming it, by the
// first call that needs the message table: every claim reads the paused
// table.
func TestLacksPauseMigration(t *testing.T) {
	f := newGroupFixture(t)
	f.exec(`DROP TABLE conveyor_events_paused`)
	ps, err := New(f.db, Options{NoListen: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	err = ps.Topic("old").Enqueue(f.ctx, []byte("x"))
	if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "0008") {
		t.Fatalf("Enqueue without migration 0008: %v, want ErrNotMigrated naming 0008", err)
	}
}
