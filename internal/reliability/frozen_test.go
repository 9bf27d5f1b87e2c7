package reliability

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// Fault: the server stops answering (frozen, its port still open) while an
// Enqueue with no deadline of its own is in flight. Close returns once
// CloseTimeout has passed, and Shutdown(ctx) once ctx ends, though the
// statement timeout is far longer; the call in flight then fails with
// pubsub.ErrClosed. (The watchdog, a minute, only tells a hang from an
// answer: StatementTimeout is ten.)
func TestCloseOnFrozenServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  dbpubsub.Options
		close func(ps *dbpubsub.PubSub) error
	}{
		{"Close honours CloseTimeout", dbpubsub.Options{CloseTimeout: time.Second}, func(ps *dbpubsub.PubSub) error { return ps.Close() }},
		{"Shutdown honours its ctx", dbpubsub.Options{CloseTimeout: 10 * time.Minute}, func(ps *dbpubsub.PubSub) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return ps.Shutdown(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := newStore(t)
			px := startProxy(t, serverOf(t, dsn))
			opts := tc.opts
			opts.StatementTimeout = 10 * time.Minute
			opts.Logger = discard
			ps, err := dbpubsub.New(openDB(t, px.dsn(t, dsn)), opts)
			if err != nil {
				t.Fatal(err)
			}
			tp := ps.Topic("frozen")
			if err := tp.Enqueue(context.Background(), []byte("before")); err != nil {
				t.Fatal(err)
			}
			px.freeze()
			inFlight := make(chan error, 1)
			go func() { inFlight <- tp.Enqueue(context.Background(), []byte("in flight")) }()
			time.Sleep(200 * time.Millisecond) // let it reach the server

			closed := make(chan error, 1)
			go func() { closed <- tc.close(ps) }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("close: %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("close on a frozen server did not return within a minute")
			}
			select {
			case err := <-inFlight:
				if !errors.Is(err, pubsub.ErrClosed) {
					t.Errorf("the Enqueue in flight: %v, want an error wrapping pubsub.ErrClosed", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the Enqueue in flight did not return within a minute of the close")
			}
		})
	}
}
