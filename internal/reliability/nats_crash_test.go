package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

const (
	natsCrashMessages  = 3000
	natsCrashProcesses = 3 // consumer processes running at any time
	natsCrashWorkers   = 4 // Dequeue+Ack goroutines per process
	natsCrashKills     = 10
	natsCrashTopic     = "crash"
	natsCrashLease     = time.Second
	// natsCrashWork is how long a consumer works on a delivery before its
	// Ack: a kill finds deliveries in hand.
	natsCrashWork = 5 * time.Millisecond
)

// Fault 1 on NATS. Consumer processes draining the default subscription
// of a topic are killed with SIGKILL, each at a random point of the drain,
// and replaced: every message is acked in the end, and the deliveries the
// killed processes held come back, as attempt 2 or later, once their lease
// ran out.
//
// NATS does not fence a late Ack (natspubsub's doc.go), so a message acked
// twice is counted, not failed.
func TestNatsConsumerCrash(t *testing.T) {
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ps := natsConnect(t, url, natspubsub.Options{Prefix: prefix, Lease: natsCrashLease})
	// Enqueued before any consumer exists: the default subscription's
	// reserve keeps them, and the first child declares it.
	data := payloads("c", natsCrashMessages)
	enqueueParallel(t, ps.Topic(natsCrashTopic), data)

	cs := newNatsConsumers(t, url, prefix, natsCrashTopic, pubsub.DefaultSubscription, natsCrashWorkers, natsCrashWork, natsCrashLease)
	running := []int{}
	for range natsCrashProcesses {
		running = append(running, cs.start())
	}
	// Kill number k when the drain is about k/(kills+1) done, give or take
	// a third of a step, so that every kill finds the consumers at work.
	step := natsCrashMessages / (natsCrashKills + 1)
	var held []delivery
	for k := 1; k <= natsCrashKills; k++ {
		at := k*step + rand.IntN(step*2/3) - step/3
		if err := cs.waitAcked(ctx, at); err != nil {
			t.Fatalf("before kill %d: %v; consumers' output:\n%s", k, err, cs.out.Tail(4000))
		}
		i := rand.IntN(len(running))
		h, err := cs.kill(ctx, running[i])
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h...)
		running[i] = cs.start()
	}
	if err := cs.waitAcked(ctx, natsCrashMessages); err != nil {
		t.Fatalf("after %d kills: %v; on the server:\n%s\nconsumers' output:\n%s",
			natsCrashKills, err, natsState(url, prefix), cs.out.Tail(4000))
	}
	if err := cs.stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, err := range cs.failures() {
		t.Errorf("%v; output:\n%s", err, cs.out.Tail(4000))
	}

	r := cs.tally(data)
	if r.strangers != 0 {
		t.Errorf("%d unknown payloads acked", r.strangers)
	}
	// What the killed processes held, neither acked nor being acked, came
	// back to the others as a later attempt, unless another child had
	// acked an earlier attempt of it late.
	back, late := cs.cameBack(held)
	if len(held) == 0 || len(back)+len(late) != len(held) {
		t.Errorf("the killed processes held %d deliveries, %d came back after the lease and %d were acked late by another: want all, and some",
			len(held), len(back), len(late))
		t.Logf("what the children said about the payloads held:\n%s", cs.history(held))
	}
	st, err := admin.TopicStats(ctx, ps.Topic(natsCrashTopic))
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != 0 || st.Processing != 0 || st.Scheduled != 0 || st.Dead != 0 {
		t.Errorf("after the drain the topic holds %+v, want nothing; on the server:\n%s", st, natsState(url, prefix))
	}
	result{
		fault: "consumer crash (SIGKILL, NATS)", messages: natsCrashMessages, acked: natsCrashMessages - r.lost,
		duplicates: r.redeliv,
		note: fmt.Sprintf("%d kills and restarts, %d processes × %d workers, lease %v; the killed held %d deliveries, %d came back (the others' earlier attempts were acked late); %d Acks under way at a kill (taken by the server, which holds nothing unacked); %d messages acked twice (NATS does not fence a late Ack)",
			natsCrashKills, natsCrashProcesses, natsCrashWorkers, natsCrashLease, len(held), len(back), r.doubt, r.twice),
	}.report(t)
}
