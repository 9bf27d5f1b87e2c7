package dbpubsub

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/conveyorgo/conveyor/migrations"
)

// An error reported after the caller's ctx ended keeps every cause
// matchable: the ctx's error and the error of the statement.
func TestCtxErrKeepsEveryCause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cause := fmt.Errorf("dbpubsub: enqueue on topic %q: %w", "orders", migrations.NotMigratedError("conveyor_events", "is missing"))
	err := ctxErr(ctx, cause)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ctxErr = %v, does not match context.Canceled", err)
	}
	if !errors.Is(err, migrations.ErrNotMigrated) {
		t.Errorf("ctxErr = %v, does not match migrations.ErrNotMigrated", err)
	}
	if got := ctxErr(context.Background(), cause); got != cause {
		t.Errorf("ctxErr with a live ctx = %v, want the error unchanged", got)
	}
}
