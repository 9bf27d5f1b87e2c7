package reliability

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/internal/faultproxy"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/pubsub"
)

const silentTopic = "silent-connections"

// Fault: the connections a consumer's PubSub has open stop answering (a
// failover behind one address, a NAT or proxy that lost its state), while
// new connections work. Every statement has a deadline (StatementTimeout):
// the stalled ones fail, their connections are discarded, the failure is
// logged, and consumption resumes on fresh connections: every message
// enqueued after the silence is delivered and acked.
func TestSilentConnections(t *testing.T) { eachAckMode(t, testSilentConnections) }

func testSilentConnections(t *testing.T, mode ackMode) {
	dsn, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	px := faultproxy.Start(t, serverOf(t, dsn))

	var logs syncbuf.Buffer
	opts := mode.options(5 * time.Second)
	opts.StatementTimeout = 2 * time.Second
	opts.PollInterval = 250 * time.Millisecond
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	consumer := newPubSub(t, openDB(t, px.DSN(dsn)), opts)
	producer := newPubSub(t, db, quietOptions(5*time.Second)).Topic(silentTopic)

	const before, after = 200, 200
	cnt := newCounter()
	cctx, stop := context.WithCancel(ctx)
	wg := consumeUntil(cctx, consumer.Topic(silentTopic), 4, func(m pubsub.Message) {
		cnt.deliver(m)
		if ackPersistently(cctx, m) {
			cnt.ack(m)
		}
	})
	waitAcked := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for cnt.ackedCount() < want {
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("%s: %d of %d acked within %v; the consumer's logs:\n%s", what, cnt.ackedCount(), want, patience, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	enqueueAll(t, producer, payloads("before", before))
	waitAcked(before, "before the silence")

	n := px.Silence()
	t.Logf("silenced %d connections", n)
	enqueueAll(t, producer, payloads("after", after))
	waitAcked(before+after, "after the silence")
	// A queued ack cut off by the silence brings its message back after
	// its lease: the consumers run until the table has every message
	// settled.
	if err := waitSettled(ctx, db, silentTopic, before+after); err != nil {
		t.Fatalf("after the silence: %v; the consumer's logs:\n%s", err, logs.String())
	}
	stop()
	wg.Wait()

	acked, redeliveries, twice := cnt.tally()
	t.Logf("%d acked, %d redeliveries, %d acked twice", acked, redeliveries, twice)
	if !strings.Contains(logs.String(), "deadline exceeded") && !strings.Contains(logs.String(), "timeout") {
		t.Errorf("the stalled statements were not logged:\n%s", logs.String())
	}
	acks, dead, _, _ := dbCount(t, db, silentTopic)
	result{fault: "silent connections, " + mode.name, messages: before + after, acked: acks, dead: dead, duplicates: redeliveries,
		note: fmt.Sprintf("%d connections silenced", n)}.report(t)
}
