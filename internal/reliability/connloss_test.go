package reliability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

const (
	connLossMessages = 10_000
	connLossTopic    = "connection-loss"
)

// withAppName returns the URL DSN with application_name set, so that a
// test can find its connections in pg_stat_activity.
func withAppName(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Fault 2. While consumers drain a topic, pg_terminate_backend kills every
// connection of their PubSub (pooled ones and the LISTEN one) again and
// again. Consumers reconnect, polling covers the gap, nothing is lost, and
// afterwards the listener is back: a message enqueued by another process
// wakes an idle consumer long before its poll would.
func TestConnectionLoss(t *testing.T) { eachAckMode(t, testConnectionLoss) }

func testConnectionLoss(t *testing.T, mode ackMode) {
	dsn, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	app := "reliability-connloss-" + hex.EncodeToString(b[:])
	cdb := openDB(t, withAppName(t, dsn, app))
	const poll = 2 * time.Second
	opts := mode.options(2 * time.Second)
	opts.PollInterval = poll
	ps := newPubSub(t, cdb, opts)
	tp := ps.Topic(connLossTopic)
	enqueueAll(t, tp, payloads("c", connLossMessages))

	cnt := newCounter()
	cctx, stop := context.WithCancel(ctx)
	wg := consumeUntil(cctx, tp, 8, func(m pubsub.Message) {
		cnt.deliver(m)
		if ackPersistently(cctx, m) {
			cnt.ack(m)
		}
	})

	// The storm: every 200 ms, terminate every backend of the consumers'
	// PubSub, from another pool.
	rounds, killed, listenersKilled := 0, 0, 0
	stormEnd := time.Now().Add(20 * time.Second)
	for time.Now().Before(stormEnd) && cnt.ackedCount() < connLossMessages {
		time.Sleep(200 * time.Millisecond)
		var n, l int
		err := db.DB.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)),
				count(*) FILTER (WHERE query LIKE 'LISTEN%')
			FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n, &l)
		if err != nil {
			t.Fatalf("pg_terminate_backend: %v", err)
		}
		rounds++
		killed += n
		listenersKilled += l
	}
	ackedDuringStorm := cnt.ackedCount()
	if rounds < 3 || listenersKilled == 0 {
		t.Errorf("the storm ran %d rounds and killed the listener %d times, want at least 3 rounds and one listener kill", rounds, listenersKilled)
	}

	if err := waitSettled(ctx, db, connLossTopic, connLossMessages); err != nil {
		t.Fatalf("after the storm: %v", err)
	}

	// The listener is back: a LISTEN connection exists again, and a
	// message from another process wakes the idle consumers in much less
	// than the poll interval.
	// The listener's last statement is its LISTEN, or the ping it sends
	// after 15 quiet seconds (pgx's "-- ping"); the wake-ups below are the
	// proof that it listens.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := db.DB.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND (query LIKE 'LISTEN%' OR query = '-- ping')`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no LISTEN connection 20 s after the storm: the listener did not come back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	producer := newPubSub(t, db, dbpubsub.Options{NoListen: true, Logger: discard})
	ptp := producer.Topic(connLossTopic)
	var lat []time.Duration
	for i := range 5 {
		time.Sleep(300 * time.Millisecond) // the consumers are idle
		before := cnt.ackedCount()
		start := time.Now()
		if err := ptp.Enqueue(ctx, fmt.Appendf(nil, "wake-%d", i)); err != nil {
			t.Fatal(err)
		}
		for cnt.ackedCount() == before {
			if time.Since(start) > 3*poll {
				t.Fatalf("a message enqueued after the storm was not consumed within %v", 3*poll)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	stop()
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if median := lat[len(lat)/2]; median > poll/2 {
		t.Errorf("after the storm, median wake-up latency %v (all %v), want well under the %v poll: the listener is not back", median, lat, poll)
	}

	if err := ps.Flush(ctx); err != nil { // the wake-ups' acks, when queued
		t.Fatal(err)
	}
	acked, dead, redeliveries, storedTwice := dbCount(t, db, connLossTopic)
	inProcAcked, inProcRedeliveries, ackedTwice := cnt.tally()
	twice := mode.checkAckedTwice(t, ackedTwice, storedTwice)
	acked -= 5 // the wake-up messages
	inProcAcked -= 5
	if inProcAcked != acked {
		t.Errorf("consumers saw %d Acks succeed, the table has %d messages finished", inProcAcked, acked)
	}
	result{
		fault: "connection loss (pg_terminate_backend), " + mode.name, messages: connLossMessages, acked: acked, dead: dead,
		duplicates: max(redeliveries, inProcRedeliveries),
		note: fmt.Sprintf("%d storm rounds every 200 ms killed %d backends (%d LISTEN); %d acked during the storm; wake-up latency after it %v (poll %v); duplicates are deliveries whose settle or lease renewal was cut off; %d acked twice (queued acks cut off)",
			rounds, killed, listenersKilled, ackedDuringStorm, slices.Clip(lat), poll, twice),
	}.report(t)
}

const (
	ackStormMessages = 20_000
	ackStormRounds   = 150
	ackStormTopic    = "ack-storm"
)

// Fault 2, counted for the default acks (issue 30, item 3): consumers
// handle messages while pg_terminate_backend kills every connection of
// their PubSub every 100–250 ms (about 30 s, some 500 backends, as the
// issue's storm). The consumers are paced by the storm,
// ackStormMessages/ackStormRounds messages per round, so that every
// message is handled during it, whatever the machine's speed (the storm
// goes on while the messages whose acks were lost come back). A queued
// ack cut off with its connection is written again on a new one while
// its lease holds: at most 1% of the messages may be handled (delivered
// to a handler and acked) twice.
func TestAckStorm(t *testing.T) {
	dsn, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	app := "reliability-ackstorm-" + hex.EncodeToString(b[:])
	// The defaults (queued acks, the default lease), as the storm
	// had them: a queued ack is written again while its lease holds, and
	// a lease much shorter than the default one would let a loaded
	// machine's retries run out of it (a 2 s lease did, under make test).
	logs := newLogCounter()
	opts := dbpubsub.Options{PollInterval: 100 * time.Millisecond, Logger: logs.logger()}
	ps := newPubSub(t, openDB(t, withAppName(t, dsn, app)), opts)
	tp := ps.Topic(ackStormTopic)
	enqueueAll(t, tp, payloads("s", ackStormMessages))

	cnt := newCounter()
	tokens := make(chan struct{}, ackStormMessages)
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select { // a message per token: the storm paces the consumers
				case <-tokens:
				case <-cctx.Done():
					return
				}
				m, err := tp.Dequeue(cctx)
				for err != nil {
					if cctx.Err() != nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
					m, err = tp.Dequeue(cctx)
				}
				cnt.deliver(m)
				if ackPersistently(cctx, m) {
					cnt.ack(m)
				}
			}
		}()
	}

	feed := func() { // from the last paced round on: a token for every Dequeue
		for cctx.Err() == nil {
			select {
			case tokens <- struct{}{}:
			case <-cctx.Done():
			}
		}
	}
	rounds, killed := 0, 0
	perRound := (ackStormMessages + ackStormRounds - 1) / ackStormRounds
	for cnt.ackedCount() < ackStormMessages {
		switch {
		case rounds < ackStormRounds:
			for range perRound {
				tokens <- struct{}{}
			}
		case rounds == ackStormRounds:
			go feed()
		}
		time.Sleep(time.Duration(100+mrand.IntN(151)) * time.Millisecond)
		var n int
		if err := db.DB.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatalf("pg_terminate_backend: %v", err)
		}
		rounds++
		killed += n
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acked after %d storm rounds", cnt.ackedCount(), ackStormMessages, rounds)
		}
	}
	if rounds <= ackStormRounds {
		go feed()
	}
	if err := ps.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitSettled(ctx, db, ackStormTopic, ackStormMessages); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	stop()
	wg.Wait()

	acked, dead, redeliveries, storedTwice := dbCount(t, db, ackStormTopic)
	_, inProcRedeliveries, ackedTwice := cnt.tally()
	if storedTwice != 0 {
		t.Errorf("%d messages stored twice, want 0", storedTwice)
	}
	t.Logf("%d storm rounds killed %d backends; %d of %d messages handled twice (%d redeliveries); the PubSub logged:%v",
		rounds, killed, ackedTwice, ackStormMessages, inProcRedeliveries, logs)
	if limit := ackStormMessages / 100; ackedTwice > limit {
		t.Errorf("%d of %d messages handled twice, want at most %d (1%%): their queued acks were not written while their leases held (the PubSub's logs are above)",
			ackedTwice, ackStormMessages, limit)
	}
	result{
		fault: "ack storm (pg_terminate_backend every 100-250 ms), default-ack", messages: ackStormMessages, acked: acked, dead: dead,
		duplicates: max(redeliveries, inProcRedeliveries),
		note:       fmt.Sprintf("%d rounds killed %d backends; %d handled twice", rounds, killed, ackedTwice),
	}.report(t)
}
