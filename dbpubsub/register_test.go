package dbpubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A *bun.DB that the app keeps and shares survives di.Shutdown of one
// injector: the PubSub of another injector on it goes on working.
func TestShutdownLeavesABorrowedDB(t *testing.T) {
	_, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topicOf := func(ictx context.Context) pubsub.Topic {
		t.Helper()
		if err := di.RegisterBorrowed(ictx, db); err != nil {
			t.Fatal(err)
		}
		if err := dbpubsub.Register(ictx); err != nil {
			t.Fatal(err)
		}
		if err := pubsub.RegisterTopic(ictx); err != nil {
			t.Fatal(err)
		}
		tp, err := di.ResolveNamed[pubsub.Topic](ictx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	first, second := di.NewContext(ctx), di.NewContext(ctx)
	defer di.Shutdown(second)
	a, b := topicOf(first), topicOf(second)
	if err := a.Enqueue(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := di.Shutdown(first); err != nil {
		t.Fatalf("di.Shutdown: %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("the borrowed DB after di.Shutdown: %v", err)
	}
	if err := b.Enqueue(ctx, []byte("after")); err != nil {
		t.Fatalf("Enqueue on the other injector's topic: %v", err)
	}
	for _, want := range []string{"before", "after"} {
		m, err := b.Dequeue(ctx)
		if err != nil {
			t.Fatalf("Dequeue: %v", err)
		}
		if string(m.Data()) != want {
			t.Fatalf("got %q, want %q", m.Data(), want)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
