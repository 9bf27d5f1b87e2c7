package natspubsub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// A message of the largest size, with a header, dies with a long
// non-ASCII reason: its dead copy fits the server's max_payload and keeps
// the reason, cut at a character's end.
func TestDeadReasonAtSizeLimit(t *testing.T) {
	t.Parallel()
	reason := errors.New(strings.Repeat("ü", 1024) + " and more") // 2 KiB, 6 KiB escaped
	for _, c := range []struct {
		name   string
		header pubsub.Header
		kill   func(context.Context, pubsub.Message) error
	}{
		{"rejected", nil, func(ctx context.Context, m pubsub.Message) error { return pubsub.Reject(ctx, m, reason) }},
		{"failed at its last attempt", nil, func(ctx context.Context, m pubsub.Message) error { return pubsub.Fail(ctx, m, reason) }},
		{"rejected with a header", pubsub.Header{"trace": strings.Repeat("t", 100)},
			func(ctx context.Context, m pubsub.Message) error { return pubsub.Reject(ctx, m, reason) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ps := connect(t, natspubsub.Options{Retry: pubsub.RetryPolicy{MaxAttempts: 1}})
			tp := ps.Topic("dead-reason")
			// The largest data that fits with the header.
			size := ps.MaxDataSize()
			for k, v := range c.header {
				size -= len(k) + len(v)
			}
			data := []byte(strings.Repeat("d", size))
			var err error
			for ; ; data = data[:len(data)-1] {
				err = tp.Enqueue(pubsub.WithHeader(ctx, c.header), data)
				if !errors.Is(err, pubsub.ErrTooLarge) || len(data) < size-64 {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := tp.Dequeue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.kill(ctx, m); err != nil {
				t.Fatalf("making a message of %d bytes dead with a reason of %d bytes: %v", len(data), len(reason.Error()), err)
			}
			dead, err := admin.ListDead(ctx, tp, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(dead) != 1 {
				t.Fatalf("ListDead = %d messages, want 1", len(dead))
			}
			d := dead[0]
			if len(d.Data) != len(data) || d.ID != m.ID() {
				t.Fatalf("dead message %s of %d bytes, want %s of %d", d.ID, len(d.Data), m.ID(), len(data))
			}
			if len(d.LastError) < 100 || !strings.HasPrefix(reason.Error(), d.LastError) || !utf8.ValidString(d.LastError) {
				t.Fatalf("dead message's reason %q (%d bytes), want a start of %d bytes of the reason, cut at a character's end", d.LastError, len(d.LastError), len(reason.Error()))
			}
		})
	}
}
