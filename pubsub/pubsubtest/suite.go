package pubsubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Run checks that the backend made by h keeps the pubsub contract. Every
// backend's conformance test calls it; the cases run in parallel, each on a
// fresh backend.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("pubsubtest: Harness.New is nil")
	}
	cases := []testCase{
		{"AbilitiesAsDeclared", testAbilities},
		{"ForeignTransactionRefused", testForeignTx},
		{"RoundTripExactBytes", testRoundTrip},
		{"UniqueIDs", testUniqueIDs},
		{"FIFOForOneConsumer", testFIFO},
		{"TopicsAreIsolated", testIsolation},
		{"HandlesShareATopic", testHandlesShare},
		{"AckIsFinal", testAckIsFinal},
		{"NackRedeliversAfterGrowingBackoff", testNackBackoff},
		{"MaxAttemptsThenDead", testDead},
		{"RejectIsDeadAtOnce", testReject},
		{"RequeueAndPurgeDead", testRequeueAllAndPurge},
		{"ConcurrentRequeueDead", testConcurrentRequeue},
		{"LeaseExpiryRedeliversAndFences", testLeaseExpiry},
		{"LeaseExpiryCountsAttempts", testLeaseExhausts},
		{"ExtendLease", testExtendLease},
		{"DequeueHonoursContext", testDequeueContext},
		{"EnqueueHonoursContext", testEnqueueContext},
		{"Close", testClose},
		{"SettleTwice", testSettleTwice},
		{"InvalidTopicNames", testInvalidTopic},
		{"NamesAreDataNotCode", testOddNames},
		{"SizeLimit", testSizeLimit},
		{"Delay", testDelay},
		{"Batch", testBatch},
		{"PipelinedBatch", testPipelinedBatch},
		{"Unique", testUnique},
		{"UniqueWindow", testUniqueWindow},
		{"Stats", testStats},
		{"StatsOldestReady", testStatsOldestReady},
		{"ConcurrentProducersAndConsumers", testConcurrent},
		{"InjectTopicByTag", testInject},
		{"SharedAcrossInstances", testShared},
		{"Durable", testDurable},
	}
	for _, more := range [][]testCase{subscriptionCases, policyCases, headerCases, inspectCases, pauseCases, ackCountCases, failureCases, quiesceCases} {
		cases = append(cases, more...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, h)
		})
	}
}

// testCase is one case of the suite.
type testCase struct {
	name string
	run  func(*testing.T, Harness)
}

func testRoundTrip(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "roundtrip")
	size := 1 << 20
	if h.LargestData > 0 {
		size = min(size, h.LargestData)
	}
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(rand.IntN(256))
	}
	payloads := [][]byte{nil, {}, []byte("hello"), {0, 1, 0, 255, 0}, []byte("ünïcödé ✓"), big}
	for _, p := range payloads {
		src := append([]byte(nil), p...)
		if err := tp.Enqueue(context.Background(), src); err != nil {
			t.Fatalf("Enqueue(%d bytes): %v", len(p), err)
		}
		for i := range src { // the backend must have copied the data
			src[i] ^= 0xff
		}
	}
	for i, p := range payloads {
		m := dequeue(t, tp)
		if !bytes.Equal(m.Data(), p) {
			t.Fatalf("payload %d: got %d bytes, want %d bytes exactly as enqueued", i, len(m.Data()), len(p))
		}
		ack(t, m)
	}
}

func testUniqueIDs(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "ids")
	const n = 200
	for i := range n {
		enqueue(t, tp, fmt.Sprint(i))
	}
	seen := make(map[string]bool, n)
	for range n {
		m := dequeue(t, tp)
		if m.ID() == "" {
			t.Fatal("empty message ID")
		}
		if seen[m.ID()] {
			t.Fatalf("ID %q given to two messages", m.ID())
		}
		seen[m.ID()] = true
		ack(t, m)
	}
}

func testFIFO(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "fifo")
	const n = 100
	for i := range n {
		enqueue(t, tp, fmt.Sprintf("m%03d", i))
	}
	for i := range n {
		m := dequeue(t, tp)
		wantData(t, m, fmt.Sprintf("m%03d", i))
		ack(t, m)
	}
}

func testIsolation(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	a, b := open(t, ps, "a"), open(t, ps, "b")
	enqueue(t, a, "for a")
	enqueue(t, b, "for b")
	m := dequeue(t, b)
	wantData(t, m, "for b")
	ack(t, m)
	expectNone(t, b, 200*time.Millisecond)
	m = dequeue(t, a)
	wantData(t, m, "for a")
	ack(t, m)
	expectNone(t, a, 200*time.Millisecond)
}

func testHandlesShare(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	one, two := open(t, ps, "shared"), open(t, ps, "shared")
	enqueue(t, one, "x")
	m := dequeue(t, two)
	wantData(t, m, "x")
	if err := one.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Closing one handle leaves the other, and deliveries made, usable.
	ack(t, m)
	enqueue(t, two, "y")
	m = dequeue(t, two)
	wantData(t, m, "y")
	ack(t, m)
}

func testAckIsFinal(t *testing.T, h Harness) {
	const lease = 300 * time.Millisecond
	tp := open(t, newPubSub(t, h, Config{Lease: lease}), "ack")
	enqueue(t, tp, "once")
	ack(t, dequeue(t, tp))
	expectNone(t, tp, 3*lease)
}

func testNackBackoff(t *testing.T, h Harness) {
	const base = 300 * time.Millisecond
	cfg := Config{Retry: pubsub.RetryPolicy{MaxAttempts: 5, MinBackoff: base, Jitter: -1}, Lease: 10 * time.Second}
	tp := open(t, newPubSub(t, h, cfg), "nack")
	enqueue(t, tp, "again")
	first := dequeue(t, tp)
	wantAttempt(t, h, first, 1)

	start := time.Now()
	nack(t, first)
	second := dequeue(t, tp)
	atLeast(t, "first redelivery", start, base)
	if second.ID() != first.ID() {
		t.Fatalf("redelivery has ID %q, want %q", second.ID(), first.ID())
	}
	wantData(t, second, "again")
	wantAttempt(t, h, second, 2)

	start = time.Now()
	nack(t, second)
	third := dequeue(t, tp)
	atLeast(t, "second redelivery", start, 2*base) // the backoff doubled
	wantAttempt(t, h, third, 3)
	ack(t, third)
}

func testDead(t *testing.T, h Harness) {
	need(t, h.Abilities.DeadLetters, "dead letters (admin.DeadLetters)")
	cfg := Config{Retry: pubsub.RetryPolicy{MaxAttempts: 3, MinBackoff: 20 * time.Millisecond, Jitter: -1}}
	tp := open(t, newPubSub(t, h, cfg), "dead")
	enqueue(t, tp, "poison")
	var id string
	keepsReasons := false
	for i := 1; i <= 3; i++ {
		m := dequeue(t, tp)
		keepsReasons = h.Abilities.FailReasons
		wantAttempt(t, h, m, i)
		id = m.ID()
		if err := pubsub.Fail(context.Background(), m, fmt.Errorf("boom %d", i)); err != nil {
			t.Fatalf("Fail: %v", err)
		}
	}
	expectNone(t, tp, 300*time.Millisecond)

	dead := deadLetters(t, tp)
	if len(dead) != 1 {
		t.Fatalf("ListDead: %d messages, want 1", len(dead))
	}
	d := dead[0]
	if d.ID != id || string(d.Data) != "poison" || d.Attempts != 3 {
		t.Fatalf("dead message %+v, want ID %s, data %q, 3 attempts", d, id, "poison")
	}
	if keepsReasons && !strings.Contains(d.LastError, "boom 3") {
		t.Fatalf("dead message's last error %q, want it to contain %q", d.LastError, "boom 3")
	}
	if d.DiedAt.IsZero() {
		t.Fatal("dead message has no DiedAt")
	}

	wantErr(t, "RequeueDead of an unknown ID", admin.RequeueDead(context.Background(), tp, "no-such-id"), admin.ErrNotFound)
	malformed := admin.RequeueDead(context.Background(), tp, "no such id")
	wantErr(t, "RequeueDead of a malformed ID", malformed, admin.ErrInvalidID)
	wantErr(t, "RequeueDead of a malformed ID", malformed, admin.ErrNotFound)
	if err := admin.RequeueDead(context.Background(), tp, id); err != nil {
		t.Fatalf("RequeueDead: %v", err)
	}
	wantErr(t, "RequeueDead twice", admin.RequeueDead(context.Background(), tp, id), admin.ErrNotFound)
	m := dequeue(t, tp)
	if m.ID() != id {
		t.Fatalf("requeued message has ID %q, want %q", m.ID(), id)
	}
	wantAttempt(t, h, m, 1)
	ack(t, m)
	if dead := deadLetters(t, tp); len(dead) != 0 {
		t.Fatalf("ListDead after requeue: %d messages, want 0", len(dead))
	}
}

func testReject(t *testing.T, h Harness) {
	need(t, h.Abilities.Reject && h.Abilities.DeadLetters, "reject and dead letters (pubsub.Rejecter, admin.DeadLetters)")
	tp := open(t, newPubSub(t, h, Config{Retry: pubsub.RetryPolicy{MinBackoff: 10 * time.Millisecond}}), "reject")
	enqueue(t, tp, "hopeless")
	m := dequeue(t, tp)
	if err := pubsub.Reject(context.Background(), m, errors.New("cannot decode")); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	expectNone(t, tp, 200*time.Millisecond)
	dead := deadLetters(t, tp)
	if len(dead) != 1 || dead[0].ID != m.ID() || dead[0].Attempts != 1 || !strings.Contains(dead[0].LastError, "cannot decode") {
		t.Fatalf("ListDead after Reject: %+v, want message %s with 1 attempt and its reason", dead, m.ID())
	}
}

func testRequeueAllAndPurge(t *testing.T, h Harness) {
	need(t, h.Abilities.Reject && h.Abilities.DeadLetters, "reject and dead letters (pubsub.Rejecter, admin.DeadLetters)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "requeue-all")
	rejectAll := func(n int) {
		t.Helper()
		for range n {
			if err := pubsub.Reject(ctx, dequeue(t, tp), errors.New("no")); err != nil {
				t.Fatalf("Reject: %v", err)
			}
		}
	}
	enqueue(t, tp, "a", "b")
	rejectAll(2)
	n, err := admin.RequeueAllDead(ctx, tp)
	if err != nil || n != 2 {
		t.Fatalf("RequeueAllDead = %d, %v; want 2, nil", n, err)
	}
	rejectAll(2)
	n, err = admin.PurgeDead(ctx, tp)
	if err != nil || n != 2 {
		t.Fatalf("PurgeDead = %d, %v; want 2, nil", n, err)
	}
	if dead := deadLetters(t, tp); len(dead) != 0 {
		t.Fatalf("ListDead after PurgeDead: %d messages, want 0", len(dead))
	}
	expectNone(t, tp, 200*time.Millisecond)
}

// testConcurrentRequeue re-queues one dead message from several
// goroutines at once: one call succeeds, the others wrap ErrNotFound, and
// the message comes back once.
func testConcurrentRequeue(t *testing.T, h Harness) {
	need(t, h.Abilities.Reject && h.Abilities.DeadLetters, "reject and dead letters (pubsub.Rejecter, admin.DeadLetters)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "requeue-race")
	const rounds, callers = 5, 4
	for round := range rounds {
		enqueue(t, tp, fmt.Sprint("m", round))
		m := dequeue(t, tp)
		if err := pubsub.Reject(ctx, m, errors.New("no")); err != nil {
			t.Fatalf("Reject: %v", err)
		}
		var wg sync.WaitGroup
		errs := make([]error, callers)
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				errs[i] = admin.RequeueDead(ctx, tp, m.ID())
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, admin.ErrNotFound):
				t.Fatalf("round %d: a losing RequeueDead: %v, want an error wrapping ErrNotFound", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent RequeueDead of one message succeeded, want 1", round, won, callers)
		}
		back := dequeue(t, tp)
		if back.ID() != m.ID() {
			t.Fatalf("round %d: got message %s back, want %s", round, back.ID(), m.ID())
		}
		ack(t, back)
		expectNone(t, tp, 300*time.Millisecond)
	}
}

func testLeaseExpiry(t *testing.T, h Harness) {
	const lease = 400 * time.Millisecond
	tp := open(t, newPubSub(t, h, Config{Lease: lease}), "lease")
	enqueue(t, tp, "slow")
	start := time.Now()
	stale := dequeue(t, tp)
	fresh := dequeue(t, tp) // blocks until the lease runs out
	atLeast(t, "redelivery after lease expiry", start, lease)
	if fresh.ID() != stale.ID() {
		t.Fatalf("redelivery has ID %q, want %q", fresh.ID(), stale.ID())
	}
	wantAttempt(t, h, fresh, 2)
	ctx := context.Background()
	wantErr(t, "Ack of the stale delivery", stale.Ack(ctx), pubsub.ErrLeaseExpired)
	wantErr(t, "Nack of the stale delivery", stale.Nack(ctx), pubsub.ErrLeaseExpired)
	ack(t, fresh) // the stale settles did not touch the new delivery
	expectNone(t, tp, 3*lease)
}

func testLeaseExhausts(t *testing.T, h Harness) {
	need(t, h.Abilities.DeadLetters, "dead letters (admin.DeadLetters)")
	const lease = 300 * time.Millisecond
	cfg := Config{Lease: lease, Retry: pubsub.RetryPolicy{MaxAttempts: 2}}
	tp := open(t, newPubSub(t, h, cfg), "lease-dead")
	enqueue(t, tp, "crashes its consumer")
	first := dequeue(t, tp)
	second := dequeue(t, tp)
	wantAttempt(t, h, second, 2)
	expectNone(t, tp, 4*lease)
	dead := deadLetters(t, tp)
	if len(dead) != 1 || dead[0].ID != first.ID() || dead[0].Attempts != 2 {
		t.Fatalf("ListDead: %+v, want message %s with 2 attempts", dead, first.ID())
	}
}

func testExtendLease(t *testing.T, h Harness) {
	need(t, h.Abilities.ExtendLease, "lease extension (pubsub.LeaseExtender)")
	const lease = 300 * time.Millisecond
	tp := open(t, newPubSub(t, h, Config{Lease: lease}), "extend")
	enqueue(t, tp, "long job")
	m := dequeue(t, tp)
	if err := pubsub.ExtendLease(context.Background(), m, 20*lease); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	expectNone(t, tp, 4*lease)
	ack(t, m)
	wantErr(t, "ExtendLease after Ack", pubsub.ExtendLease(context.Background(), m, lease), pubsub.ErrSettled)
}

func testDequeueContext(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "ctx")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := tp.Dequeue(ctx)
	wantErr(t, "Dequeue past its deadline", err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = tp.Dequeue(ctx)
	wantErr(t, "Dequeue with a canceled context", err, context.Canceled)

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = tp.Dequeue(ctx)
	wantErr(t, "Dequeue canceled while waiting", err, context.Canceled)

	// An ended ctx gets no message even when one is ready, and the message
	// is not lost.
	enqueue(t, tp, "ready")
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = tp.Dequeue(ctx)
	wantErr(t, "Dequeue with a canceled context and a ready message", err, context.Canceled)
	m := dequeue(t, tp)
	wantData(t, m, "ready")
	ack(t, m)
}

func testEnqueueContext(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "enqueue-ctx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantErr(t, "Enqueue with a canceled context", tp.Enqueue(ctx, []byte("phantom")), context.Canceled)
	expectNone(t, tp, 200*time.Millisecond)
}

func testClose(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	tp, err := pubsub.OpenTopic(ps, "close")
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, tp, "a", "b")
	m := dequeue(t, tp)

	blocked := make(chan error, 1)
	idle, err := pubsub.OpenTopic(ps, "close-idle")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := idle.Dequeue(context.Background())
		blocked <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it block; the assertion holds either way
	if err := idle.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-blocked:
		wantErr(t, "Dequeue blocked when its topic closed", err, pubsub.ErrClosed)
	case <-time.After(patience):
		t.Fatal("Close did not wake a blocked Dequeue")
	}

	if err := tp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	wantErr(t, "Enqueue after Close", tp.Enqueue(ctx, []byte("x")), pubsub.ErrClosed)
	_, err = tp.Dequeue(ctx)
	wantErr(t, "Dequeue after Close", err, pubsub.ErrClosed)
	wantErr(t, "Close twice", tp.Close(), pubsub.ErrClosed)
	ack(t, m) // a delivery outlives its handle

	// The messages are the backend's, not the handle's.
	other := open(t, ps, "close")
	got := dequeue(t, other)
	wantData(t, got, "b")
	ack(t, got)
}

func testSettleTwice(t *testing.T, h Harness) {
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{Retry: pubsub.RetryPolicy{MinBackoff: time.Hour}}), "settle")
	enqueue(t, tp, "1", "2", "3", "4")
	cases := []struct {
		name          string
		first, second func(pubsub.Message) error
	}{
		{"AckAck", func(m pubsub.Message) error { return m.Ack(ctx) }, func(m pubsub.Message) error { return m.Ack(ctx) }},
		{"NackAck", func(m pubsub.Message) error { return m.Nack(ctx) }, func(m pubsub.Message) error { return m.Ack(ctx) }},
		{"AckNack", func(m pubsub.Message) error { return m.Ack(ctx) }, func(m pubsub.Message) error { return m.Nack(ctx) }},
		{"RejectFail", func(m pubsub.Message) error { return pubsub.Reject(ctx, m, errors.New("x")) }, func(m pubsub.Message) error { return pubsub.Fail(ctx, m, errors.New("y")) }},
	}
	for _, c := range cases {
		if c.name == "RejectFail" && !h.Abilities.Reject {
			continue
		}
		m := dequeue(t, tp)
		if err := c.first(m); err != nil {
			t.Fatalf("%s: first settle: %v", c.name, err)
		}
		wantErr(t, c.name+": second settle", c.second(m), pubsub.ErrSettled)
	}
}

func testInvalidTopic(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for _, name := range []string{"", " padded ", strings.Repeat("x", pubsub.MaxTopicNameLen+1), "bad\xffutf8", "tab\tin"} {
		if _, err := pubsub.OpenTopic(ps, name); !errors.Is(err, pubsub.ErrInvalidTopic) {
			t.Errorf("OpenTopic(%q): %v, want ErrInvalidTopic", name, err)
		}
		tp := ps.Topic(name)
		if err := tp.Enqueue(ctx, []byte("x")); !errors.Is(err, pubsub.ErrInvalidTopic) {
			t.Errorf("Topic(%q).Enqueue: %v, want ErrInvalidTopic", name, err)
		}
		if _, err := tp.Dequeue(ctx); !errors.Is(err, pubsub.ErrInvalidTopic) {
			t.Errorf("Topic(%q).Dequeue: %v, want ErrInvalidTopic", name, err)
		}
	}
}

func testOddNames(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	names := []string{
		`o'rders"; DROP TABLE conveyor_events; --`,
		"$1", "%s", `\`, "名前", strings.Repeat("y", pubsub.MaxTopicNameLen),
	}
	for _, name := range names {
		enqueue(t, open(t, ps, name), name)
	}
	for _, name := range names {
		m := dequeue(t, open(t, ps, name))
		wantData(t, m, name)
		ack(t, m)
	}
}

func testSizeLimit(t *testing.T, h Harness) {
	const limit = 1024
	tp := open(t, newPubSub(t, h, Config{MaxDataSize: limit}), "size")
	ctx := context.Background()
	if err := tp.Enqueue(ctx, make([]byte, limit)); err != nil {
		t.Fatalf("Enqueue of exactly the limit: %v", err)
	}
	wantErr(t, "Enqueue one byte over the limit", tp.Enqueue(ctx, make([]byte, limit+1)), pubsub.ErrTooLarge)
	m := dequeue(t, tp)
	if len(m.Data()) != limit {
		t.Fatalf("got %d bytes, want %d", len(m.Data()), limit)
	}
	ack(t, m)
	expectNone(t, tp, 200*time.Millisecond)
}

func testDelay(t *testing.T, h Harness) {
	// Long enough that "now", enqueued after it, is due first even on a
	// loaded machine (400 ms was not).
	const delay = 2 * time.Second
	tp := open(t, newPubSub(t, h, Config{}), "delay")
	start := time.Now()
	need(t, h.Abilities.Delay, "delayed enqueue (pubsub.Delayer)")
	err := pubsub.EnqueueDelayed(context.Background(), tp, []byte("later"), delay)
	if err != nil {
		t.Fatalf("EnqueueDelayed: %v", err)
	}
	enqueue(t, tp, "now")
	m := dequeue(t, tp)
	wantData(t, m, "now")
	ack(t, m)
	m = dequeue(t, tp)
	wantData(t, m, "later")
	atLeast(t, "delayed message", start, delay)
	ack(t, m)
}

func testBatch(t *testing.T, h Harness) {
	need(t, h.Abilities.Batch, "batch enqueue (pubsub.BatchEnqueuer)")
	tp := open(t, newPubSub(t, h, Config{MaxDataSize: 64}), "batch")
	batchInOrder(t, tp, 100)
	bad := [][]byte{[]byte("fine"), make([]byte, 65)}
	wantErr(t, "EnqueueBatch with an item over the limit", pubsub.EnqueueBatch(context.Background(), tp, bad), pubsub.ErrTooLarge)
	expectNone(t, tp, 200*time.Millisecond) // all or none
}

// testPipelinedBatch: a batch sent together arrives whole and in order;
// an item over the size limit is refused before anything is sent.
func testPipelinedBatch(t *testing.T, h Harness) {
	need(t, h.Abilities.Pipelined, "pipelined batch enqueue (pubsub.PipelinedEnqueuer)")
	tp := open(t, newPubSub(t, h, Config{MaxDataSize: 64}), "pipelined")
	batchInOrder(t, tp, 300)
	bad := [][]byte{[]byte("fine"), make([]byte, 65)}
	err := pubsub.EnqueueBatch(context.Background(), tp, bad)
	wantErr(t, "EnqueueBatch with an item over the limit", err, pubsub.ErrTooLarge)
	var be *pubsub.BatchError
	if errors.As(err, &be) {
		t.Errorf("EnqueueBatch with an item over the limit: %v is a *BatchError; want the whole batch refused before sending", err)
	}
	enqueue(t, tp, "after")
	wantData(t, dequeue(t, tp), "after") // nothing of the refused batch came before
}

// batchInOrder enqueues a batch of n items with EnqueueBatch and checks
// that they are delivered in order, each payload kept exactly.
func batchInOrder(t *testing.T, tp pubsub.Topic, n int) {
	t.Helper()
	batch := make([][]byte, n)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "b%03d", i)
	}
	// Payloads are bytes, kept exactly, in a batch too.
	copy(batch, [][]byte{nil, {}, {0, 1, 0, 255, 0}, []byte("ünïcödé ✓")})
	if err := pubsub.EnqueueBatch(context.Background(), tp, batch); err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	for i := range batch {
		m := dequeue(t, tp)
		wantData(t, m, string(batch[i]))
		ack(t, m)
	}
}

func testUnique(t *testing.T, h Harness) {
	need(t, h.Abilities.Unique && h.Abilities.Reject, "unique enqueue and reject (pubsub.UniqueEnqueuer, pubsub.Rejecter)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "unique")
	need(t, h.Abilities.Unique, "unique enqueue (pubsub.UniqueEnqueuer)")
	add := func(key, data string, want bool) {
		t.Helper()
		ok, err := pubsub.EnqueueUnique(ctx, tp, key, []byte(data))
		if err != nil || ok != want {
			t.Fatalf("EnqueueUnique(%q, %q) = %v, %v; want %v, nil", key, data, ok, err, want)
		}
	}
	add("tick-1", "first", true)
	add("tick-1", "duplicate", false)
	_, err := pubsub.EnqueueUnique(ctx, tp, "", []byte("no key"))
	wantErr(t, "EnqueueUnique with an empty key", err, pubsub.ErrInvalidKey)
	add("tick-2", "second", true)
	m := dequeue(t, tp)
	wantData(t, m, "first")
	add("tick-1", "while processing", false)
	if err := pubsub.Reject(ctx, m, errors.New("dead keeps its key")); err != nil {
		t.Fatal(err)
	}
	add("tick-1", "while dead", false)
	m = dequeue(t, tp)
	wantData(t, m, "second")
	ack(t, m)
	add("tick-2", "after its ack", false) // a finished message keeps its key until pruned
	expectNone(t, tp, 200*time.Millisecond)
}

// testUniqueWindow: on a backend that remembers keys for a window only, a
// key enqueued longer ago than the window is taken again, even while its
// first message waits; both messages are delivered.
func testUniqueWindow(t *testing.T, h Harness) {
	need(t, h.Abilities.Unique && h.Abilities.UniqueWindow > 0, "unique keys remembered for a window (Abilities.UniqueWindow)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "unique-window")
	add := func(data string, want bool) {
		t.Helper()
		ok, err := pubsub.EnqueueUnique(ctx, tp, "tick", []byte(data))
		if err != nil || ok != want {
			t.Fatalf("EnqueueUnique(%q, %q) = %v, %v; want %v, nil", "tick", data, ok, err, want)
		}
	}
	add("first", true)
	add("within the window", false)
	time.Sleep(2 * h.Abilities.UniqueWindow)
	add("after the window", true)
	for _, want := range []string{"first", "after the window"} {
		m := dequeue(t, tp)
		wantData(t, m, want)
		ack(t, m)
	}
	expectNone(t, tp, 200*time.Millisecond)
}

func testStats(t *testing.T, h Harness) {
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "stats")
	need(t, h.Abilities.Stats && h.Abilities.Delay && h.Abilities.Reject, "stats, delay and reject (admin.Stater, pubsub.Delayer, pubsub.Rejecter)")
	enqueue(t, tp, "a", "b", "c", "d")
	if err := pubsub.EnqueueDelayed(ctx, tp, []byte("later"), time.Hour); err != nil {
		t.Fatalf("EnqueueDelayed: %v", err)
	}
	m := dequeue(t, tp)
	if err := pubsub.Reject(ctx, dequeue(t, tp), errors.New("x")); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	s, err := admin.TopicStats(ctx, tp)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	// A backend may hold ready messages claimed ahead for this consumer, so
	// only the sum of ready and processing is fixed.
	if s.Ready+s.Processing != 3 || s.Processing < 1 || s.Scheduled != 1 || s.Dead != 1 {
		t.Fatalf("Stats = %+v, want ready+processing 3 (processing ≥ 1), scheduled 1, dead 1", s)
	}
	ack(t, m)
}

// testStatsOldestReady: OldestReady grows while the oldest ready message
// waits, and is 0 once none is ready.
func testStatsOldestReady(t *testing.T, h Harness) {
	need(t, h.Abilities.Stats && h.Abilities.OldestReady, "stats with the oldest ready message's age (Abilities.OldestReady)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "oldest-ready")
	stats := func() admin.Stats {
		t.Helper()
		s, err := admin.TopicStats(ctx, tp)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		return s
	}
	if s := stats(); s.OldestReady != 0 {
		t.Fatalf("Stats of an empty topic: OldestReady %v, want 0", s.OldestReady)
	}
	enqueue(t, tp, "old")
	const wait = 300 * time.Millisecond
	time.Sleep(wait)
	enqueue(t, tp, "young")
	if s := stats(); s.OldestReady < wait {
		t.Fatalf("Stats after the oldest ready message waited %v: OldestReady %v", wait, s.OldestReady)
	}
	for range 2 {
		ack(t, dequeue(t, tp))
	}
	if s := stats(); s.OldestReady != 0 {
		t.Fatalf("Stats once nothing is ready: OldestReady %v, want 0", s.OldestReady)
	}
}

func testConcurrent(t *testing.T, h Harness) {
	const producers, consumers = 8, 8
	n := h.Messages
	if n == 0 {
		n = 10_000
	}
	tp := open(t, newPubSub(t, h, Config{}), "concurrent")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, producers+consumers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += producers {
				if err := tp.Enqueue(ctx, []byte(fmt.Sprint(i))); err != nil {
					errs <- fmt.Errorf("producer %d: %w", p, err)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	seen := make(map[string]int, n)
	total := 0
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := total >= n
				mu.Unlock()
				if done {
					return
				}
				dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				m, err := tp.Dequeue(dctx)
				dcancel()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("consumer %d: %w", c, err)
					return
				}
				if err := m.Ack(ctx); err != nil {
					errs <- fmt.Errorf("consumer %d: ack: %w", c, err)
					return
				}
				mu.Lock()
				seen[string(m.Data())]++
				total++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range n {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("message %d delivered %d times, want 1", i, c)
		}
	}
	if total != n {
		t.Errorf("%d deliveries, want %d", total, n)
	}
	expectNone(t, tp, 200*time.Millisecond)
}

func testInject(t *testing.T, h Harness) {
	if h.Register == nil {
		t.Fatal("pubsubtest: Harness.Register is nil; every backend must be injectable")
	}
	ctx := di.NewContext(context.Background())
	if err := h.Register(t, ctx); err != nil {
		t.Fatalf("registering the backend: %v", err)
	}
	if err := pubsub.RegisterTopic(ctx); err != nil {
		t.Fatalf("RegisterTopic: %v", err)
	}
	t.Cleanup(func() {
		if err := di.Shutdown(ctx); err != nil {
			t.Errorf("di.Shutdown: %v", err)
		}
	})
	type handlers struct {
		Queue pubsub.Topic `inject:"orders"`
		Other pubsub.Topic `inject:"refunds"`
	}
	var one, two handlers
	if err := di.Fill(ctx, &one); err != nil {
		t.Fatalf("Fill: %v", err)
	}
	if err := di.Fill(ctx, &two); err != nil {
		t.Fatalf("Fill: %v", err)
	}
	if one.Queue == nil || one.Queue != two.Queue {
		t.Fatal(`two fields tagged inject:"orders" got different topics, want the same instance`)
	}
	if one.Queue == one.Other {
		t.Fatal(`inject:"orders" and inject:"refunds" got the same topic`)
	}
	enqueue(t, one.Queue, "order 1")
	ps, err := di.Resolve[pubsub.PubSub](ctx)
	if err != nil {
		t.Fatalf("Resolve[pubsub.PubSub]: %v", err)
	}
	m := dequeue(t, open(t, ps, "orders"))
	wantData(t, m, "order 1")
	ack(t, m)
	expectNone(t, one.Other, 100*time.Millisecond)
}

func testShared(t *testing.T, h Harness) {
	if !h.Abilities.Shared {
		t.Skip("the backend is not shared across processes (Abilities.Shared is off)")
	}
	cfg := Config{}
	one := newPubSub(t, h, cfg)
	two := h.Reopen(t, cfg, one)
	a, b := open(t, one, "shared"), open(t, two, "shared")
	msgs := numbered("m", 200)
	enqueue(t, a, msgs...)
	// Two consumers on each: every message once across the instances,
	// and none after.
	wantEach(t, "a topic on two instances", consumeAll(t, len(msgs), a, b, a, b), msgs)
	for _, tp := range []pubsub.Topic{a, b} {
		expectNone(t, tp, 200*time.Millisecond)
	}
	enqueue(t, b, "from two")
	m := dequeue(t, a)
	wantData(t, m, "from two")
	ack(t, m)
}

func testDurable(t *testing.T, h Harness) {
	if !h.Abilities.Durable {
		t.Skip("the backend is not durable (Abilities.Durable is off)")
	}
	cfg := Config{Lease: 500 * time.Millisecond}
	one := newPubSub(t, h, cfg)
	tp, err := pubsub.OpenTopic(one, "durable")
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, tp, "a", "b", "c")
	inflight := dequeue(t, tp) // its consumer "crashes": never settled
	_ = tp.Close()
	closeBackend(t, one)

	two := h.Reopen(t, cfg, one)
	tp2 := open(t, two, "durable")
	got := map[string]bool{}
	for range 3 {
		m := dequeue(t, tp2)
		got[string(m.Data())] = true
		ack(t, m)
	}
	if !got["a"] || !got["b"] || !got["c"] {
		t.Fatalf("after reopening got %v, want a, b and c (%q was in flight)", got, inflight.Data())
	}
	expectNone(t, tp2, 300*time.Millisecond)
}

// testAbilities checks that the backend offers exactly the optional
// abilities its harness declares, so that none goes untested.
func testAbilities(t *testing.T, h Harness) {
	ps := newPubSub(t, h, Config{})
	tp := open(t, ps, "abilities")
	enqueue(t, tp, "m")
	m := dequeue(t, tp)
	defer ack(t, m)
	a := h.Abilities
	for _, c := range []struct {
		what     string
		declared bool
		has      bool
	}{
		{"pubsub.Delayer (Abilities.Delay)", a.Delay, has[pubsub.Delayer](tp)},
		{"pubsub.BatchEnqueuer (Abilities.Batch)", a.Batch, has[pubsub.BatchEnqueuer](tp)},
		{"pubsub.PipelinedEnqueuer (Abilities.Pipelined)", a.Pipelined, has[pubsub.PipelinedEnqueuer](tp)},
		{"pubsub.UniqueEnqueuer (Abilities.Unique)", a.Unique, has[pubsub.UniqueEnqueuer](tp)},
		{"admin.DeadLetters (Abilities.DeadLetters)", a.DeadLetters, has[admin.DeadLetters](tp)},
		{"admin.Stater (Abilities.Stats)", a.Stats, has[admin.Stater](tp)},
		{"pubsub.Inbox (Abilities.Inbox)", a.Inbox, has[pubsub.Inbox](tp)},
		{"admin.Pauser (Abilities.Pause)", a.Pause, has[admin.Pauser](tp)},
		{"pubsub.Subscriber (Abilities.Subscriptions)", a.Subscriptions, has[pubsub.Subscriber](ps)},
		{"pubsub.SubscriberWith (Abilities.Subscriptions)", a.Subscriptions, has[pubsub.SubscriberWith](ps)},
		{"admin.TopicLister (Abilities.TopicList)", a.TopicList, has[admin.TopicLister](ps)},
		{"admin.Quiescer (Abilities.Quiesce)", a.Quiesce, has[admin.Quiescer](ps)},
		{"admin.Peeker (Abilities.Peek)", a.Peek, has[admin.Peeker](tp)},
		{"admin.Canceler (Abilities.Cancel)", a.Cancel, has[admin.Canceler](tp)},
		{"admin.DeadDeleter (Abilities.DeleteDead)", a.DeleteDead, has[admin.DeadDeleter](tp)},
		{"admin.AckCounter (Abilities.AckCount)", a.AckCount, has[admin.AckCounter](tp)},
		{"pubsub.Attempter (Abilities.Attempts)", a.Attempts, has[pubsub.Attempter](m)},
		{"pubsub.LeaseExtender (Abilities.ExtendLease)", a.ExtendLease, has[pubsub.LeaseExtender](m)},
		{"pubsub.Failer (Abilities.FailReasons)", a.FailReasons, has[pubsub.Failer](m)},
		{"pubsub.Rejecter (Abilities.Reject)", a.Reject, has[pubsub.Rejecter](m)},
	} {
		switch {
		case c.declared && !c.has:
			t.Errorf("the harness declares %s, but the backend (%T, topic %T) lacks it", c.what, ps, tp)
		case !c.declared && c.has:
			t.Errorf("the backend (%T, topic %T) has %s, but the harness does not declare it: it would go untested", ps, tp, c.what)
		}
	}
	if !a.Quiesce {
		wantQuiesceUnsupported(t, ps)
	}
}

func has[T any](v any) bool {
	_, ok := pubsub.As[T](v)
	return ok
}

// testForeignTx checks that an enqueue asked to run in a transaction the
// backend cannot write in (here a value of no store at all) is refused
// with ErrUnsupported and adds nothing: atomicity is never lost silently.
func testForeignTx(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "foreign-tx")
	type notATransaction struct{}
	ctx, cancel := context.WithTimeout(pubsub.WithTx(context.Background(), notATransaction{}), patience)
	defer cancel()
	calls := map[string]func() error{
		"Enqueue": func() error { return tp.Enqueue(ctx, []byte("x")) },
	}
	if h.Abilities.Delay {
		calls["EnqueueAt"] = func() error { return pubsub.EnqueueAt(ctx, tp, []byte("x"), time.Now()) }
	}
	if h.Abilities.Batch {
		calls["EnqueueBatch"] = func() error { return pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte("x")}) }
	}
	if h.Abilities.Unique {
		calls["EnqueueUnique"] = func() error { _, err := pubsub.EnqueueUnique(ctx, tp, "k", []byte("x")); return err }
	}
	for name, call := range calls {
		wantErr(t, name+" in a foreign transaction", call(), pubsub.ErrUnsupported)
	}
	expectNone(t, tp, 200*time.Millisecond)
}
