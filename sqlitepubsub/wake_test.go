package sqlitepubsub_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// TestWakeUps: a consumer waiting in the process that enqueues is woken
// by the enqueue (its PollInterval, an hour, would never come); a
// consumer in another PubSub on the file (another process, as far as the
// store can tell) finds it by polling.
func TestWakeUps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wake.db")
	open := func(poll time.Duration) *sqlitepubsub.PubSub {
		ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{PollInterval: poll, Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		return ps
	}
	local, other := open(time.Hour), open(10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := local.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		consumer *sqlitepubsub.PubSub
	}{{"same process", local}, {"other process", other}} {
		got := make(chan error, 1)
		topic := "wake-" + c.name[:4]
		go func() {
			m, err := c.consumer.Topic(topic).Dequeue(ctx)
			if err == nil {
				err = m.Ack(ctx)
			}
			got <- err
		}()
		// Let the consumer start waiting: its first claim found nothing
		// once the topic's default subscription is declared.
		for {
			subs, err := c.consumer.Subscriptions(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if len(subs) == 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := local.Topic(topic).Enqueue(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("%s: %v (not woken before the ctx ended)", c.name, err)
		}
	}
}
