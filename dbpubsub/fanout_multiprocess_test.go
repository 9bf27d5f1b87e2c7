package dbpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// fanoutChildEnv, when set to a DSN, makes TestFanOutMultiProcess run as
// one of the consumer processes it starts.
const fanoutChildEnv = "DBPUBSUB_TEST_FANOUT_DSN"

const (
	fanMessages = 5_000
	fanWorkers  = 2 // Dequeue+Ack goroutines per subscription per process
	fanTopic    = "fan-out"
)

var fanSubs = []string{"mailer", "analytics"}

// Three processes consume two subscriptions of one topic. Every message
// is acked once in each subscription, none is lost, none acked twice. The
// consumers use Options.ConfirmAck: "none acked twice" after a SIGKILL is
// its guarantee (by default the acks a killed process had queued are
// lost and their messages come back; internal/reliability counts those).
func TestFanOutMultiProcess(t *testing.T) {
	if dsn := os.Getenv(fanoutChildEnv); dsn != "" {
		consumeFanOut(t, dsn)
		return
	}
	fanOutProcesses(t, false)
}

// The same while one of the processes is killed with SIGKILL mid-run and
// another started in its place.
func TestFanOutMultiProcessKilled(t *testing.T) { fanOutProcesses(t, true) }

func fanOutProcesses(t *testing.T, kill bool) {
	if testing.Short() {
		t.Skip("starts three or four processes; skipped with -short")
	}
	ctx := context.Background()
	dsn, db := newStore(t)
	// A second successful Ack of a copy would break the primary key.
	if _, err := db.ExecContext(ctx, "CREATE TABLE fan_acks (sub text, n int, pid int NOT NULL, PRIMARY KEY (sub, n))"); err != nil {
		t.Fatal(err)
	}
	ps := newPubSub(t, db, dbpubsub.Options{})
	for _, s := range fanSubs {
		subscribe(t, ps, fanTopic, s)
	}
	tp := ps.Topic(fanTopic)
	batch := make([][]byte, 500)
	for i := 0; i < fanMessages; i += len(batch) {
		for j := range batch {
			batch[j] = fmt.Appendf(nil, "%d", i+j)
		}
		if err := pubsub.EnqueueBatch(ctx, tp, batch); err != nil {
			t.Fatal(err)
		}
	}

	start := func() *child { return startChild(t, "TestFanOutMultiProcess", fanoutChildEnv+"="+dsn) }
	children := []*child{start(), start(), start()}

	// Kill the first once the work is well under way, and start another.
	deadline := time.Now().Add(60 * time.Second)
	for kill {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM fan_acks").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 1500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acks after a minute; the first consumer's output:\n%s", n, children[0].out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if kill {
		victim := children[0].cmd.Process.Pid
		if err := children[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = children[0].cmd.Wait()
		children = append(children[1:], start())
		t.Logf("killed consumer %d and started %d", victim, children[2].cmd.Process.Pid)
	}

	for i, c := range children {
		waitChild(t, c, fmt.Sprintf("consumer %d", i+1), 3*time.Minute)
	}

	for _, s := range fanSubs {
		queue := fanTopic + "\x1f" + s
		var finished, distinct, acks, redelivered int
		for q, dst := range map[string]*int{
			"SELECT count(*) FROM conveyor_events WHERE topic = $1 AND status = 'finished'":             &finished,
			"SELECT count(DISTINCT data) FROM conveyor_events WHERE topic = $1 AND status = 'finished'": &distinct,
			"SELECT count(*) FROM conveyor_events WHERE topic = $1 AND attempts > 1":                    &redelivered,
			"SELECT count(*) FROM fan_acks WHERE sub = $1":                                              &acks,
		} {
			arg := queue
			if strings.Contains(q, "fan_acks") {
				arg = s
			}
			if err := db.DB.QueryRowContext(ctx, q, arg).Scan(dst); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("subscription %s: %d finished (%d distinct), %d redelivered, %d acks recorded", s, finished, distinct, redelivered, acks)
		if finished != fanMessages || distinct != fanMessages {
			t.Errorf("subscription %s: %d copies finished (%d distinct), want all %d", s, finished, distinct, fanMessages)
		}
		// The killed process may have committed an Ack per worker without
		// recording it.
		lost := 0
		if kill {
			lost = fanWorkers
		}
		if acks < fanMessages-lost || acks > fanMessages {
			t.Errorf("subscription %s: %d acks recorded, want %d (at most %d fewer)", s, acks, fanMessages, lost)
		}
	}
	if n := countRows(t, db, "topic = '"+fanTopic+"'"); n != 0 {
		t.Errorf("%d copies in the default subscription, never consumed nor declared; want none", n)
	}
}

// consumeFanOut is the body of a consumer process: it acks the copies of
// both subscriptions until no message of the table is unfinished.
func consumeFanOut(t *testing.T, dsn string) {
	ctx := context.Background()
	db := openDB(t, dsn)
	ps := newPubSub(t, db, dbpubsub.Options{Lease: 2 * time.Second, RescueInterval: 250 * time.Millisecond, ConfirmAck: true})
	pid := os.Getpid()
	var wg sync.WaitGroup
	for _, s := range fanSubs {
		tp := subscribe(t, ps, fanTopic, s)
		for range fanWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := dbpubsubtest.NextUnfinished(ctx, tp, db, 500*time.Millisecond)
					if err != nil || m == nil {
						if err != nil {
							t.Error(err)
						}
						return
					}
					if err := m.Ack(ctx); err != nil {
						if errors.Is(err, pubsub.ErrLeaseExpired) {
							continue // too slow: someone else has it now
						}
						t.Error(err)
						return
					}
					if _, err := db.DB.ExecContext(ctx, "INSERT INTO fan_acks (sub, n, pid) VALUES ($1, $2, $3)", s, string(m.Data()), pid); err != nil {
						t.Errorf("subscription %s, message %q: %v", s, m.Data(), err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}
