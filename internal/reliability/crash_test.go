package reliability

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
)

const (
	crashMessages  = 20_000
	crashProcesses = 3  // consumer processes running at any time
	crashWorkers   = 8  // Dequeue+Ack goroutines per process
	crashKills     = 10 // SIGKILLs, each followed by a restart
	crashTopic     = "crash"
	crashDSNEnv    = "RELIABILITY_DSN"
	crashConfirm   = "RELIABILITY_CONFIRM_ACK" // "true": Options.ConfirmAck
	crashLease     = time.Second
)

// Fault 1. Consumer processes draining a 20,000-message topic are killed
// with SIGKILL at random moments and replaced; every message is acked in
// the end, and the deliveries the killed processes held come back when
// their lease runs out. With Options.ConfirmAck none is acked twice; by
// default the acks a killed process had queued are lost, and their
// messages come back too (counted as duplicates).
func TestConsumerCrash(t *testing.T) { eachAckMode(t, testConsumerCrash) }

func testConsumerCrash(t *testing.T, mode ackMode) {
	dsn, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	// Each consumer counts its successful Acks here, per message.
	if _, err := db.DB.ExecContext(ctx, "CREATE TABLE acks (id bigint PRIMARY KEY, n int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	ps := newPubSub(t, db, quietOptions(crashLease))
	enqueueAll(t, ps.Topic(crashTopic), payloads("m", crashMessages))

	var out syncbuf.Buffer
	var mu sync.Mutex
	var running []*exec.Cmd
	var waits sync.WaitGroup
	exited := make(chan error, 100)
	start := func() {
		cmd := startChild(t, "consume", &out, crashDSNEnv+"="+dsn, fmt.Sprintf("%s=%t", crashConfirm, mode.confirm))
		mu.Lock()
		running = append(running, cmd)
		mu.Unlock()
		waits.Add(1)
		go func() {
			defer waits.Done()
			exited <- cmd.Wait()
		}()
	}
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range running {
			_ = c.Process.Kill()
		}
		mu.Unlock()
		waits.Wait()
	})
	for range crashProcesses {
		start()
	}

	// Kill a random consumer at random moments, once it is at work.
	kills, failures := 0, 0
	for kills < crashKills {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		var open int
		if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events_all WHERE status <> 'finished'").Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break // drained before all the kills
		}
		mu.Lock()
		victim := running[rand.IntN(len(running))]
		mu.Unlock()
		if victim.Process.Signal(syscall.SIGKILL) == nil {
			kills++
			mu.Lock()
			for i, c := range running {
				if c == victim {
					running = append(running[:i], running[i+1:]...)
					break
				}
			}
			mu.Unlock()
			start()
		}
		if ctx.Err() != nil {
			t.Fatalf("still killing after %v; consumers' output:\n%s", 150*time.Second, out.Tail(4000))
		}
	}
	if err := waitSettled(ctx, db, crashTopic, crashMessages); err != nil {
		t.Fatalf("after %d kills: %v; consumers' output:\n%s", kills, err, out.Tail(4000))
	}
	// The survivors exit once the topic is drained.
	mu.Lock()
	survivors := len(running)
	mu.Unlock()
	for range survivors + kills {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL) {
				failures++
				t.Errorf("a consumer failed: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("consumers did not exit after the drain; output:\n%s", out.Tail(4000))
		}
	}
	if failures > 0 {
		t.Logf("consumers' output:\n%s", out.Tail(4000))
	}

	acked, dead, redeliveries, storedTwice := dbCount(t, db, crashTopic)
	var ackedTwice int
	if err := db.DB.QueryRowContext(ctx, "SELECT count(*) FROM acks WHERE n > 1").Scan(&ackedTwice); err != nil {
		t.Fatal(err)
	}
	twice := mode.checkAckedTwice(t, ackedTwice, storedTwice)
	result{
		fault: "consumer crash (SIGKILL), " + mode.name, messages: crashMessages, acked: acked, dead: dead,
		duplicates: redeliveries,
		note: fmt.Sprintf("%d kills and restarts, %d processes × %d workers, lease %v; duplicates are the deliveries held by killed processes, redelivered after their lease; %d acked twice (acks queued by a killed process)",
			kills, crashProcesses, crashWorkers, crashLease, twice),
	}.report(t)
}

// childConsume is a consumer process of TestConsumerCrash: it acks the
// messages of the topic until none is left unfinished, recording each
// successful Ack in table acks (a second successful Ack of one message
// would be a fencing bug).
func childConsume() error {
	dsn := os.Getenv(crashDSNEnv)
	db, err := dbpubsub.Open(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	ps, err := dbpubsub.New(db, ackMode{confirm: os.Getenv(crashConfirm) == "true"}.options(crashLease))
	if err != nil {
		return err
	}
	defer ps.Close()
	tp := ps.Topic(crashTopic)
	errs := make(chan error, crashWorkers)
	var wg sync.WaitGroup
	for range crashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := dbpubsubtest.NextUnfinished(ctx, tp, db, 500*time.Millisecond)
				if errors.Is(err, driver.ErrBadConn) { // its count of the unfinished rows: see retryBadConn
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if m == nil {
					return
				}
				if !ackPersistently(ctx, m) {
					continue // too slow: the message went to someone else
				}
				if err := retryBadConn(func() error {
					_, err := db.DB.ExecContext(ctx,
						"INSERT INTO acks (id, n) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET n = acks.n + 1", m.ID())
					return err
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(func() []error {
		var all []error
		for e := range errs {
			all = append(all, e)
		}
		return all
	}()...)
}

// retryBadConn runs the child's own bookkeeping statement f again, up to
// five times, while it fails with driver.ErrBadConn: pgx reports it only
// for a statement it did not send, so a retry never records an ack twice.
// A loaded test server made one child's pool hand out broken connections
// several times in a row (database/sql's own retries ran out), which
// failed TestConsumerCrash without a fault of conveyor's.
func retryBadConn(f func() error) error {
	err := f()
	for i := 0; i < 5 && errors.Is(err, driver.ErrBadConn); i++ {
		time.Sleep(100 * time.Millisecond)
		err = f()
	}
	return err
}
