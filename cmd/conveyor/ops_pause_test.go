package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// TestOpsPause pauses a subscription with the command while an app's
// consumer waits on it: the consumer gets nothing until resume, then the
// message.
func TestOpsPause(t *testing.T) {
	t.Parallel()
	dsn, db := pgtest.NewSchema(t)
	ctx := context.Background()
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := dbpubsub.New(db, dbpubsub.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	jobs := ps.Topic("jobs")
	if err := jobs.Enqueue(ctx, []byte("first")); err != nil { // the topic exists
		t.Fatal(err)
	}
	m, err := jobs.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	e := env{vars: map[string]string{"DATABASE_URL": dsn}}

	if code, out, errs := runCmd(t, e, "pause", "jobs"); code != 0 || out != "Paused topic \"jobs\": no consumer gets its messages until resume.\n" {
		t.Fatalf("pause: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if paused, err := admin.IsPaused(ctx, jobs); err != nil || !paused {
		t.Fatalf("after pause, IsPaused = %v, %v; want true", paused, err)
	}
	if err := jobs.Enqueue(ctx, []byte("held")); err != nil {
		t.Fatalf("enqueue while paused: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	m, err = jobs.Dequeue(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dequeue while paused: %v, %v; want nothing until the ctx ends", m, err)
	}

	if code, out, errs := runCmd(t, e, "resume", "jobs", "--json"); code != 0 || out != "{\n  \"paused\": false\n}\n" {
		t.Fatalf("resume: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err = jobs.Dequeue(wait)
	if err != nil || string(m.Data()) != "held" {
		t.Fatalf("dequeue after resume: %v; want the held message", err)
	}
	_ = m.Ack(ctx)

	if code, _, errs := runCmd(t, e, "pause", "nosuch"); code != exitNotFound {
		t.Errorf("pause of an unknown topic: exit %d (%s), want %d", code, errs, exitNotFound)
	}
}
