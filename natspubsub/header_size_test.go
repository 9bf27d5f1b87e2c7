package natspubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A caller's header counts with the data toward MaxDataSize: data that
// fits alone but not with its header is ErrTooLarge, naming both sizes.
func TestHeaderCountsTowardMaxDataSize(t *testing.T) {
	t.Parallel()
	const limit = 1000
	ps := connect(t, natspubsub.Options{MaxDataSize: limit})
	tp := ps.Topic("sized")
	ctx := context.Background()
	hctx := pubsub.WithHeader(ctx, pubsub.Header{"note": strings.Repeat("n", 100)})
	if err := tp.Enqueue(ctx, make([]byte, limit)); err != nil {
		t.Fatalf("data of the limit without a header: %v", err)
	}
	err := tp.Enqueue(hctx, make([]byte, limit-50))
	if !errors.Is(err, pubsub.ErrTooLarge) || !strings.Contains(err.Error(), "of header") {
		t.Fatalf("data under the limit with a header over it: %v, want ErrTooLarge naming the header", err)
	}
	if err := tp.Enqueue(hctx, make([]byte, limit-200)); err != nil {
		t.Fatalf("data and header within the limit: %v", err)
	}
}
