package dbpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// childEnv, when set to a DSN, makes TestMultiProcess run as one of the
// consumer processes it starts.
const childEnv = "DBPUBSUB_TEST_CONSUMER_DSN"

const (
	mpMessages = 20_000
	mpWorkers  = 4 // Dequeue+Ack goroutines per process
	mpTopic    = "multi-process"
)

// Three processes consume one topic; one is killed with SIGKILL mid-run.
// Every message is acked, none twice, and the killed process's deliveries
// come back once their lease runs out.
func TestMultiProcess(t *testing.T) {
	if dsn := os.Getenv(childEnv); dsn != "" {
		consume(t, dsn)
		return
	}
	if testing.Short() {
		t.Skip("starts three processes; skipped with -short")
	}
	ctx := context.Background()
	dsn, db := newStore(t)
	// Each process records the acks that succeeded; a second successful Ack
	// of a message would break the primary key.
	if _, err := db.ExecContext(ctx, "CREATE TABLE acks (id bigint PRIMARY KEY, pid int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// The process to be killed records there the deliveries it holds when
	// it is killed.
	if _, err := db.ExecContext(ctx, "CREATE TABLE held (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	ps := newPubSub(t, db, dbpubsub.Options{})
	tp := ps.Topic(mpTopic)
	batch := make([][]byte, 1000)
	for i := 0; i < mpMessages; i += len(batch) {
		for j := range batch {
			batch[j] = fmt.Appendf(batch[j][:0], "%d", i+j)
		}
		if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
			t.Fatal(err)
		}
	}

	children := make([]*child, 3)
	for i := range children {
		env := []string{childEnv + "=" + dsn}
		if i == 0 {
			env = append(env, victimEnv+"=1")
		}
		children[i] = startChild(t, "TestMultiProcess", env...)
	}

	// Kill the first process once it is well into the work, holding a
	// delivery in each of its workers.
	victim := children[0].cmd.Process.Pid
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM held").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= mpWorkers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first consumer holds %d deliveries after a minute; its output:\n%s", n, children[0].out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := children[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = children[0].cmd.Wait()
	var inFlight int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM conveyor_events WHERE status = 'processing' AND lease_until > now()").Scan(&inFlight); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed consumer %d; %d messages leased at that moment", victim, inFlight)

	for i, c := range children[1:] {
		waitChild(t, c, fmt.Sprintf("consumer %d", i+2), 2*time.Minute)
	}

	var finished, redelivered, acks, acksOfVictim, heldRedelivered int
	for q, dst := range map[string]*int{
		"SELECT count(*) FROM conveyor_events e JOIN held h ON h.id = e.id WHERE e.status = 'finished' AND e.attempts > 1": &heldRedelivered,
		"SELECT count(*) FROM conveyor_events WHERE status = 'finished'":                                                   &finished,
		"SELECT count(*) FROM conveyor_events WHERE attempts > 1":                                                          &redelivered,
		"SELECT count(*) FROM acks":                                     &acks,
		fmt.Sprintf("SELECT count(*) FROM acks WHERE pid = %d", victim): &acksOfVictim,
	} {
		if err := db.QueryRowContext(ctx, q).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d finished, %d redelivered, %d acks recorded (%d by the killed consumer)", finished, redelivered, acks, acksOfVictim)
	if finished != mpMessages {
		t.Errorf("%d messages finished, want all %d: messages were lost", finished, mpMessages)
	}
	// The killed process may have committed up to one Ack per worker
	// without recording it before it died.
	if acks < mpMessages-mpWorkers || acks > mpMessages {
		t.Errorf("%d acks recorded, want %d (at most %d fewer)", acks, mpMessages, mpWorkers)
	}
	if heldRedelivered != mpWorkers {
		t.Errorf("%d of the %d deliveries held by the killed consumer were delivered again and acked, want all",
			heldRedelivered, mpWorkers)
	}
}

// victimEnv marks the consumer process that will be killed: after 1000
// acks each of its workers takes one more delivery, records it in table
// held, and hangs until the process is killed.
const victimEnv = "DBPUBSUB_TEST_VICTIM"

// consume is the body of a consumer process: it acks messages until the
// topic has none left unfinished.
func consume(t *testing.T, dsn string) {
	victim := os.Getenv(victimEnv) != ""
	var acked atomic.Int64
	ctx := context.Background()
	db := openDB(t, dsn)
	// ConfirmAck: "none acked twice" after a SIGKILL is its guarantee (see
	// TestFanOutMultiProcess).
	ps := newPubSub(t, db, dbpubsub.Options{Lease: 2 * time.Second, RescueInterval: 250 * time.Millisecond, ConfirmAck: true})
	tp := ps.Topic(mpTopic)
	pid := os.Getpid()
	var wg sync.WaitGroup
	for range mpWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := dbpubsubtest.NextUnfinished(ctx, tp, db, 500*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if m == nil {
					return
				}
				if victim && acked.Load() >= 1000 {
					if _, err := db.DB.ExecContext(ctx, "INSERT INTO held (id) VALUES ($1)", m.ID()); err != nil {
						t.Error(err)
					}
					select {} // hang until killed
				}
				if err := m.Ack(ctx); err != nil {
					if errors.Is(err, pubsub.ErrLeaseExpired) {
						continue // too slow: someone else has it now
					}
					t.Error(err)
					return
				}
				if _, err := db.DB.ExecContext(ctx, "INSERT INTO acks (id, pid) VALUES ($1, $2)", m.ID(), pid); err != nil {
					if strings.Contains(err.Error(), "duplicate key") {
						t.Errorf("message %s acked twice: %v", m.ID(), err)
					} else {
						t.Error(err)
					}
					return
				}
				acked.Add(1)
			}
		}()
	}
	wg.Wait()
}
