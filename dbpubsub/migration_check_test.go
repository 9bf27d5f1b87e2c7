package dbpubsub

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/migrations"
)

// A schema without one of the later migrations (what it made dropped
// here) is reported as such, naming it, by the first call that needs the
// message table: 0007 (headers), 0008 (the paused table), 0009 (the
// subscriptions' retry policies, which the rescue reads).
func TestLacksLaterMigrations(t *testing.T) {
	for _, tc := range []struct {
		version string
		drop    []string
	}{
		{"0007", []string{`DROP VIEW conveyor_events_all`,
			`ALTER TABLE conveyor_events_ready DROP COLUMN headers`, `ALTER TABLE conveyor_events DROP COLUMN headers`}},
		{"0008", []string{`DROP TABLE conveyor_events_paused`}},
		{"0009", []string{`ALTER TABLE conveyor_events_subscriptions DROP COLUMN retry_max_attempts`}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			f := newGroupFixture(t)
			for _, q := range tc.drop {
				f.exec(q)
			}
			ps, err := New(f.db, Options{NoListen: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			err = ps.Topic("old").Enqueue(f.ctx, []byte("x"))
			if !errors.Is(err, migrations.ErrNotMigrated) || !strings.Contains(err.Error(), tc.version) {
				t.Fatalf("Enqueue without migration %s: %v, want ErrNotMigrated naming %s", tc.version, err, tc.version)
			}
		})
	}
}
