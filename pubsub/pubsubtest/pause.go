package pubsubtest

import (
	"context"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The cases of pausing a subscription (admin.Pauser).
var pauseCases = []testCase{
	{"PauseHoldsMessagesUntilResume", testPause},
	{"PauseHoldsAWaitingConsumer", testPauseWaiting},
	{"PauseIsPerSubscription", testPausePerSubscription},
	{"PauseIsDurable", testPauseDurable},
	{"PauseIsShared", testPauseShared},
}

func needPause(t *testing.T, h Harness) {
	t.Helper()
	need(t, h.Abilities.Pause, "pausing (admin.Pauser)")
}

func pause(t *testing.T, tp pubsub.Topic) {
	t.Helper()
	if err := admin.Pause(context.Background(), tp); err != nil {
		t.Fatalf("Pause: %v", err)
	}
}

func resume(t *testing.T, tp pubsub.Topic) {
	t.Helper()
	if err := admin.Resume(context.Background(), tp); err != nil {
		t.Fatalf("Resume: %v", err)
	}
}

func wantPaused(t *testing.T, tp pubsub.Topic, want bool) {
	t.Helper()
	got, err := admin.IsPaused(context.Background(), tp)
	if err != nil || got != want {
		t.Fatalf("IsPaused = %v, %v; want %v, nil", got, err, want)
	}
}

// waitingDequeue starts a Dequeue on tp that waits up to patience (or
// until the case ends); its message, nil on an error, comes on the channel.
func waitingDequeue(t *testing.T, tp pubsub.Topic) <-chan pubsub.Message {
	got := make(chan pubsub.Message, 1)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	go func() {
		m, err := tp.Dequeue(ctx)
		if err != nil && ctx.Err() == nil { // else the case has ended
			t.Errorf("Dequeue: %v", err)
		}
		got <- m
	}()
	return got
}

// wantWoken checks that got, a waitingDequeue's channel, brings data once
// resumed (what says what resumed it).
func wantWoken(t *testing.T, got <-chan pubsub.Message, data, what string) {
	t.Helper()
	select {
	case m := <-got:
		if m == nil {
			t.FailNow()
		}
		wantData(t, m, data)
		ack(t, m)
	case <-time.After(patience):
		t.Fatalf("%s did not wake the waiting Dequeue", what)
	}
}

// testPause: while paused, enqueues work and nothing is delivered, on any
// handle, not even messages a backend may have claimed ahead for its
// consumers; a delivery made before can still be settled. Resume delivers
// the messages, in order. Pausing and resuming twice is harmless.
func testPause(t *testing.T, h Harness) {
	needPause(t, h)
	ps := newPubSub(t, h, Config{})
	tp, other := open(t, ps, "pause"), open(t, ps, "pause")
	wantPaused(t, tp, false)
	enqueue(t, tp, "a", "b", "c")
	inHand := dequeue(t, tp) // its consumer may have claimed b and c ahead
	wantData(t, inHand, "a")
	pause(t, tp)
	pause(t, tp)
	wantPaused(t, tp, true)
	wantPaused(t, other, true)
	enqueue(t, tp, "d")
	expectNone(t, tp, 300*time.Millisecond)
	expectNone(t, other, 100*time.Millisecond)
	ack(t, inHand)
	resume(t, other)
	wantPaused(t, tp, false)
	for _, want := range []string{"b", "c", "d"} {
		m := dequeue(t, tp)
		wantData(t, m, want)
		ack(t, m)
	}
	resume(t, tp)
	expectNone(t, tp, 200*time.Millisecond)
}

// testPauseWaiting: a Dequeue call waiting when Pause returns gets nothing
// enqueued meanwhile, and gets it once resumed.
func testPauseWaiting(t *testing.T, h Harness) {
	needPause(t, h)
	tp := open(t, newPubSub(t, h, Config{}), "pause-waiting")
	pause(t, tp)
	got := waitingDequeue(t, tp)
	time.Sleep(50 * time.Millisecond) // let it wait; the assertions hold either way
	enqueue(t, tp, "x")
	select {
	case m := <-got:
		t.Fatalf("a waiting Dequeue got %q while paused", m.Data())
	case <-time.After(300 * time.Millisecond):
	}
	resume(t, tp)
	wantWoken(t, got, "x", "Resume")
}

// testPausePerSubscription: pausing one subscription leaves the others,
// the default one included, delivering.
func testPausePerSubscription(t *testing.T, h Harness) {
	needPause(t, h)
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	a, b := subscribe(t, ps, "pause-subs", "a"), subscribe(t, ps, "pause-subs", "b")
	def := subscribe(t, ps, "pause-subs", pubsub.DefaultSubscription)
	pause(t, a)
	wantPaused(t, a, true)
	wantPaused(t, b, false)
	wantPaused(t, def, false)
	enqueue(t, open(t, ps, "pause-subs"), "x")
	receive(t, map[string]pubsub.Topic{"b": b, "default": def}, "x")
	expectNone(t, a, 300*time.Millisecond)
	pause(t, def) // through Topic(name): the default subscription
	wantPaused(t, b, false)
	resume(t, a)
	receive(t, map[string]pubsub.Topic{"a": a}, "x")
	wantPaused(t, open(t, ps, "pause-subs"), true)
}

// testPauseDurable: a pause outlives the PubSub that made it.
func testPauseDurable(t *testing.T, h Harness) {
	needPause(t, h)
	need(t, h.Abilities.Durable, "durability (Abilities.Durable)")
	cfg := Config{}
	one := newPubSub(t, h, cfg)
	tp, err := pubsub.OpenTopic(one, "pause-durable")
	if err != nil {
		t.Fatal(err)
	}
	pause(t, tp)
	enqueue(t, tp, "x")
	_ = tp.Close()
	closeBackend(t, one)

	two := h.Reopen(t, cfg, one)
	again := open(t, two, "pause-durable")
	wantPaused(t, again, true)
	expectNone(t, again, 300*time.Millisecond)
	resume(t, again)
	m := dequeue(t, again)
	wantData(t, m, "x")
	ack(t, m)
}

// testPauseShared: a pause made in one process holds in another; a resume
// made there wakes the first one's waiting consumer.
func testPauseShared(t *testing.T, h Harness) {
	needPause(t, h)
	need(t, h.Abilities.Shared, "sharing across processes (Abilities.Shared)")
	cfg := Config{}
	one := newPubSub(t, h, cfg)
	two := h.Reopen(t, cfg, one)
	a, b := open(t, one, "pause-shared"), open(t, two, "pause-shared")
	pause(t, a)
	wantPaused(t, b, true)
	enqueue(t, b, "x")
	expectNone(t, b, 300*time.Millisecond)
	expectNone(t, a, 100*time.Millisecond)

	got := waitingDequeue(t, a)
	resume(t, b)
	wantWoken(t, got, "x", "a Resume in another process")
}
