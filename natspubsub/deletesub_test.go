package natspubsub

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A Dequeue waiting at the server on a subscription that is deleted
// returns pubsub.ErrNoSubscription, and the fetch it waited on logs no
// failure: the deletion is no fault.
func TestDeleteSubscriptionUnderWaitingDequeueLogsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs lockedBuffer
	url := natstest.URL(t)
	ps, err := Connect(url, Options{Prefix: natstest.Prefix(t, url), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	tp, err := ps.Subscribe(ctx, "deleted-under", "s")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tp.Dequeue(ctx)
		done <- err
	}()
	// Wait until the fetch's pull request waits at the server.
	st := ps.s.topic("deleted-under")
	for {
		cons, err := ps.s.js.Consumer(ctx, st.n.stream, consumerName("s"))
		if err != nil {
			t.Fatal(err)
		}
		if info, err := cons.Info(ctx); err == nil && info.NumWaiting > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no pull request waits at the server")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := ps.DeleteSubscription(ctx, "deleted-under", "s"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, pubsub.ErrNoSubscription) {
		t.Fatalf("Dequeue on the deleted subscription: %v, want ErrNoSubscription", err)
	}
	if err := ps.Close(); err != nil { // waits for the fetch
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "dequeue failed") {
		t.Fatalf("the deletion was logged as a failure:\n%s", logs.String())
	}
}
