package backend

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
)

func TestResolveDefaults(t *testing.T) {
	o, err := Options{}.Resolve("x", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if o.Lease != pubsub.DefaultLease || o.MaxDataSize != pubsub.DefaultMaxDataSize || o.Logger != slog.Default() ||
		o.Retry != (pubsub.RetryPolicy{}).WithDefaults() {
		t.Fatalf("defaults = %+v", o)
	}
	// A store that keeps less than the default makes its own limit the default.
	if o, _ := (Options{}).Resolve("x", 1<<20, "the server's max_payload"); o.MaxDataSize != 1<<20 {
		t.Fatalf("MaxDataSize default under a 1 MiB store = %d", o.MaxDataSize)
	}
	kept := Options{Lease: time.Second, MaxDataSize: 10, Retry: pubsub.RetryPolicy{MaxAttempts: 2, Jitter: -1}}
	o, err = kept.Resolve("x", 100, "")
	if err != nil || o.Lease != time.Second || o.MaxDataSize != 10 || o.Retry.MaxAttempts != 2 || o.Retry.Jitter >= 0 {
		t.Fatalf("Resolve(%+v) = %+v, %v; want the fields kept", kept, o, err)
	}
}

func TestResolveNamesTheBadField(t *testing.T) {
	for field, o := range map[string]Options{
		"Options.Lease":       {Lease: -1},
		"Options.MaxDataSize": {MaxDataSize: -1},
		"Options.Retry":       {Retry: pubsub.RetryPolicy{MaxAttempts: -1}},
	} {
		if _, err := o.Resolve("pkg", 0, ""); err == nil || !strings.HasPrefix(err.Error(), "pkg: "+field) {
			t.Errorf("Resolve(%+v) = %v, want an error naming pkg: %s", o, err, field)
		}
	}
	if _, err := (Options{MaxDataSize: 101}).Resolve("pkg", 100, "the store's limit"); err == nil || !strings.Contains(err.Error(), "the store's limit") {
		t.Errorf("MaxDataSize over the store's limit: %v", err)
	}
}

func TestFail(t *testing.T) {
	p := pubsub.RetryPolicy{MaxAttempts: 2, MinBackoff: time.Second, Jitter: -1}
	if f := Fail(p, 1, errors.New("boom")); f.Dead || f.Backoff != time.Second || f.Reason != "boom" {
		t.Errorf("first failure = %+v", f)
	}
	if f := Fail(p, 2, nil); !f.Dead || f.Reason != "" {
		t.Errorf("last failure = %+v", f)
	}
	if RejectReason(nil) != ReasonRejected || RejectReason(errors.New("bad")) != "bad" {
		t.Error("RejectReason")
	}
}

func TestInvalidTopicAndHandle(t *testing.T) {
	if CheckTopicName("pkg", "fine") != nil {
		t.Fatal("a valid name got an invalid handle")
	}
	bad := CheckTopicName("pkg", "")
	if err := bad.Enqueue(context.Background(), nil); !errors.Is(err, pubsub.ErrInvalidTopic) || !strings.HasPrefix(err.Error(), "pkg: ") {
		t.Errorf("Enqueue on an invalid name = %v", err)
	}
	h := NewHandle()
	closed := ClosedError("pkg", "t", pubsub.DefaultSubscription)
	if err := h.Close(closed); err != nil || !h.IsClosed() {
		t.Fatalf("first Close = %v", err)
	}
	if err := h.Close(closed); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	select {
	case <-h.Closed():
	default:
		t.Fatal("Closed() not closed")
	}
}
