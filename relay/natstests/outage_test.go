package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/faultproxy"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/relay"
)

// failures collects the failures a hook is handed.
type failures struct {
	mu  sync.Mutex
	all []pubsub.Failure
}

func (f *failures) hook(x pubsub.Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, x)
}

func (f *failures) of(kind pubsub.FailureKind) []pubsub.Failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pubsub.Failure
	for _, x := range f.all {
		if x.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

// TestOutageKeepsAttempts relays from a dbpubsub outbox whose retry policy
// allows 3 attempts to a dbpubsub destination behind a proxy that refuses
// every connection, for many more failed publishes than the source's
// whole retry schedule; then the destination comes back: every committed
// message arrives once, none is dead in the source, and each failed
// publish was reported to Options.OnFailure with its message.
func TestOutageKeepsAttempts(t *testing.T) {
	t.Parallel()
	_, srcDB := dbpubsubtest.NewStore(t)
	retry := pubsub.RetryPolicy{MaxAttempts: 3, MinBackoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, Jitter: -1}
	src := dbpubsubtest.New(t, srcDB, dbpubsub.Options{Retry: retry, Logger: quiet}).Topic("outbox")

	dsn, _ := dbpubsubtest.NewStore(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := faultproxy.Start(t, u.Host)
	u.Host = p.Addr()
	dstDB := dbpubsubtest.OpenDB(t, u.String())
	dst := dbpubsubtest.New(t, dstDB, dbpubsub.Options{Logger: quiet}).Topic("inbox")

	prod := produce(t, srcDB, src, "m", 5, 5)
	p.Down()
	var got failures
	const workers = 2
	r, err := relay.New(src, dst, relay.Options{Workers: workers, Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Timeout: 2 * time.Second, OnFailure: got.hook, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, r)
	// Many more publishes fail than the messages have attempts in all:
	// were each failure one of its message's attempts, every message
	// would be dead in the source.
	wantFailed := int64(len(prod.committed)*retry.MaxAttempts + 20)
	ctx := context.Background()
	waitFor(t, fmt.Sprintf("%d failed publishes", wantFailed), func() bool {
		s, err := admin.TopicStats(ctx, src)
		if err == nil && s.Dead != 0 {
			t.Fatalf("during the outage, after %d failed publishes: %d messages dead in the source", r.Stats().Failed, s.Dead)
		}
		return r.Stats().Failed >= wantFailed
	})
	p.Up(t)
	checkExactlyOnce(t, prod, drain(t, dst, len(prod.committed)))
	waitFor(t, "the source's messages acked", func() bool {
		s, err := admin.TopicStats(ctx, src)
		return err == nil && s.Ready+s.Scheduled+s.Processing == 0
	})
	if s, err := admin.TopicStats(ctx, src); err != nil || s.Dead != 0 {
		t.Errorf("source after the outage: %+v, %v; want no dead message", s, err)
	}
	if st := r.Stats(); st.Relayed != int64(len(prod.committed)) || st.Rejected != 0 {
		t.Errorf("Stats = %+v, want %d relayed, none rejected", st, len(prod.committed))
	}
	pf := got.of(pubsub.PublishFailed)
	if int64(len(pf)) < wantFailed {
		t.Fatalf("%d PublishFailed reported, want at least %d", len(pf), wantFailed)
	}
	for _, f := range pf {
		if f.Topic != "outbox" || f.Subscription != pubsub.DefaultSubscription || f.MessageID == "" ||
			f.Attempt != 1 || f.Err == nil || f.Time.IsZero() {
			t.Fatalf("a PublishFailed reported as %+v; want the source's topic and subscription, the message's ID, attempt 1, the error and the time", f)
		}
	}
	if d := got.of(pubsub.Dead); len(d) != 0 {
		t.Errorf("Dead reported: %v", d)
	}
}

// TestOutageStop stops a Relay while its destination is down: Run returns
// by its ctx, and the message in hand is back in the source.
func TestOutageStop(t *testing.T) {
	t.Parallel()
	_, srcDB := dbpubsubtest.NewStore(t)
	src := dbpubsubtest.New(t, srcDB, dbpubsub.Options{Logger: quiet}).Topic("outbox")
	dst := &failing{Topic: src, err: errors.New("the destination is unavailable")}
	dst.fails.Store(1 << 40)
	ctx := context.Background()
	if err := src.Enqueue(ctx, []byte("m")); err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(src, dst, relay.Options{Workers: 1, Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	waitFor(t, "failed publishes", func() bool { return r.Stats().Failed >= 5 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if s, err := admin.TopicStats(ctx, src); err != nil || s.Scheduled+s.Ready != 1 {
		t.Errorf("source after Run: %+v, %v; want the message back", s, err)
	}
}
