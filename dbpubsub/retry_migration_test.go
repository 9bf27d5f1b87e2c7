package dbpubsub

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/migrations"
)

// A schema without migration 0009 is reported as such, naming it, by the
// first call that needs the message table: the rescue reads the
// subscriptions' retry policies.
func TestLacksSubscriptionRetryMigration(t *testing.T) {
	f := newGroupFixture(t)
	f.exec(`ALTER TABLE conveyor_events_subscriptions DROP COLUMN retry_max_attempts`)
	ps, err := New(f.db, Options{NoListen: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	err = ps.Topic("old").Enqueue(f.ctx, []byte("x"))
	if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), "0009") {
		t.Fatalf("Enqueue without migration 0009: %v, want ErrNotMigrated naming 0009", err)
	}
}
