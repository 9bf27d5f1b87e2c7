package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// failingPublish is lateStore with a Publish that fails with err.
type failingPublish struct {
	*lateStore
	err error
}

func (s failingPublish) Topic(string) driver.Topic { return s }

func (s failingPublish) Publish(context.Context, <-chan struct{}, driver.Outgoing) (bool, error) {
	return false, s.err
}

// TestPublishErrorKeepsTheStoresWords: a store's bare pubsub.ErrClosed
// becomes the handle's closed error; one that says more (a write that
// Close cut off, which may have committed) keeps what it says, and both
// match pubsub.ErrClosed.
func TestPublishErrorKeepsTheStoresWords(t *testing.T) {
	inDoubt := fmt.Errorf("%w: the PubSub closed while the statement ran (it may have committed)", pubsub.ErrClosed)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"bare", pubsub.ErrClosed, `mini: topic "t": pubsub: closed`},
		{"in doubt", inDoubt, "it may have committed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := &lateStore{closed: make(chan struct{})}
			ps, err := engine.New(failingPublish{ls, tc.err}, engine.Options{Name: "mini"})
			if err != nil {
				t.Fatal(err)
			}
			defer ps.Close()
			err = ps.Topic("t").Enqueue(context.Background(), []byte("x"))
			if !errors.Is(err, pubsub.ErrClosed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Enqueue: %v, want an error matching pubsub.ErrClosed that says %q", err, tc.want)
			}
		})
	}
}
