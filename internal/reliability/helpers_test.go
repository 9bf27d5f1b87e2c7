package reliability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/pubsub"
)

// patience bounds every wait for something that should happen.
const patience = 60 * time.Second

var (
	newStore  = dbpubsubtest.NewStore
	newPubSub = dbpubsubtest.New
	openDB    = dbpubsubtest.OpenDB
)

// discard drops the logs of the expected faults.
var discard = slog.New(slog.DiscardHandler)

// quietOptions are dbpubsub options for fault tests: short leases and
// polls, and a logger that keeps the expected connection errors out of the
// test output.
func quietOptions(lease time.Duration) dbpubsub.Options {
	return dbpubsub.Options{
		Lease:          lease,
		RescueInterval: lease / 5,
		PollInterval:   100 * time.Millisecond,
		Logger:         discard,
	}
}

// ackMode is one of dbpubsub's two ack modes; the dbpubsub fault tests run
// in each. By default an Ack returns once queued, so a fault may bring an
// acked message back: a message acked twice is a duplicate, counted. With
// Options.ConfirmAck an Ack returns once committed, and a message acked
// twice is a failure.
type ackMode struct {
	name    string
	confirm bool
}

// eachAckMode runs f as a parallel subtest per ack mode.
func eachAckMode(t *testing.T, f func(t *testing.T, m ackMode)) {
	for _, m := range []ackMode{{"default-ack", false}, {"confirm-ack", true}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

// options are quietOptions in mode m.
func (m ackMode) options(lease time.Duration) dbpubsub.Options {
	o := quietOptions(lease)
	o.ConfirmAck = m.confirm
	return o
}

// checkAckedTwice fails t when messages were acked twice in the strict
// mode, and returns how many to count as duplicates in the default one.
func (m ackMode) checkAckedTwice(t *testing.T, ackedTwice, storedTwice int) int {
	t.Helper()
	if storedTwice != 0 || (m.confirm && ackedTwice != 0) {
		t.Errorf("%d messages acked twice, %d stored twice: want 0", ackedTwice, storedTwice)
	}
	if m.confirm {
		return 0
	}
	return ackedTwice
}

// payloads returns n distinct payloads "prefix-0" … "prefix-(n-1)".
func payloads(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(prefix + "-" + strconv.Itoa(i))
	}
	return out
}

// enqueueAll enqueues data in batches of 1000.
func enqueueAll(t testing.TB, tp pubsub.Topic, data [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for i := 0; i < len(data); i += 1000 {
		if err := pubsub.EnqueueBatch(ctx, tp, data[i:min(i+1000, len(data))]); err != nil {
			t.Fatalf("EnqueueBatch: %v", err)
		}
	}
}

// result is the line every fault test reports.
type result struct {
	fault      string
	messages   int
	acked      int
	dead       int
	duplicates int // deliveries beyond the first
	note       string
}

func (r result) lost() int { return r.messages - r.acked - r.dead }

// report logs r and fails t if a message was lost.
func (r result) report(t testing.TB) {
	t.Helper()
	t.Logf("RESULT fault=%q messages=%d acked=%d dead=%d lost=%d duplicates=%d (%s)",
		r.fault, r.messages, r.acked, r.dead, r.lost(), r.duplicates, r.note)
	if r.lost() != 0 {
		t.Errorf("%s: %d of %d messages lost (acked %d, dead %d)", r.fault, r.lost(), r.messages, r.acked, r.dead)
	}
}

// dbCount counts, in the message table of db, the distinct payloads of
// topic that were acked (finished) and that are dead, the deliveries beyond
// the first of the finished and dead ones, and the payloads stored more than
// once (a producer's retry of an enqueue that had committed).
func dbCount(t testing.TB, db *bun.DB, topic string) (acked, dead, redeliveries, storedTwice int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := db.DB.QueryRowContext(ctx, `SELECT
			count(DISTINCT data) FILTER (WHERE status = 'finished'),
			count(DISTINCT data) FILTER (WHERE status = 'dead'),
			coalesce(sum(attempts - 1) FILTER (WHERE status IN ('finished', 'dead')), 0),
			count(*) - count(DISTINCT data)
		FROM conveyor_events_all WHERE topic = $1`, topic).Scan(&acked, &dead, &redeliveries, &storedTwice)
	if err != nil {
		t.Fatalf("counting messages: %v", err)
	}
	return acked, dead, redeliveries, storedTwice
}

// waitSettled waits until topic has want distinct payloads finished or
// dead and nothing pending or processing, or ctx ends.
func waitSettled(ctx context.Context, db *bun.DB, topic string, want int) error {
	for {
		var settled, open int
		err := db.DB.QueryRowContext(ctx, `SELECT
				count(DISTINCT data) FILTER (WHERE status IN ('finished', 'dead')),
				count(*) FILTER (WHERE status IN ('pending', 'processing'))
			FROM conveyor_events_all WHERE topic = $1`, topic).Scan(&settled, &open)
		if err == nil && settled >= want && open == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages settled, %d open (last error %v): %w", settled, want, open, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ackPersistently acks m, trying again after errors that changed nothing
// (a lost connection); it reports whether the Ack took. A delivery whose
// lease ran out is not acked: the message comes back to someone.
func ackPersistently(ctx context.Context, m pubsub.Message) bool {
	for {
		err := m.Ack(ctx)
		switch {
		case err == nil:
			return true
		case errors.Is(err, pubsub.ErrLeaseExpired), errors.Is(err, pubsub.ErrSettled), ctx.Err() != nil:
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(20+rand.IntN(50)) * time.Millisecond):
		}
	}
}

// consumeUntil runs workers goroutines that dequeue from tp and pass each
// message to handle, until ctx ends. Dequeue errors other than ctx's are
// retried.
func consumeUntil(ctx context.Context, tp pubsub.Topic, workers int, handle func(pubsub.Message)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := tp.Dequeue(ctx)
				if err != nil {
					if errors.Is(err, pubsub.ErrClosed) {
						return
					}
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
					continue
				}
				handle(m)
			}
		}()
	}
	return &wg
}

// counter counts deliveries and acks per payload, in process.
type counter struct {
	mu        sync.Mutex
	delivered map[string]int
	acked     map[string]int
}

func newCounter() *counter {
	return &counter{delivered: map[string]int{}, acked: map[string]int{}}
}

func (c *counter) deliver(m pubsub.Message) {
	c.mu.Lock()
	c.delivered[string(m.Data())]++
	c.mu.Unlock()
}

func (c *counter) ack(m pubsub.Message) {
	c.mu.Lock()
	c.acked[string(m.Data())]++
	c.mu.Unlock()
}

// tally returns the payloads acked at least once, the extra deliveries and
// the payloads acked more than once.
func (c *counter) tally() (acked, redeliveries, ackedTwice int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.acked {
		acked++
		if n > 1 {
			ackedTwice++
		}
	}
	for _, n := range c.delivered {
		redeliveries += n - 1
	}
	return acked, redeliveries, ackedTwice
}

func (c *counter) ackedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

// startChild starts a copy of the test binary in role, with env added;
// its output goes to out. It is killed in t.Cleanup if still running.
func startChild(t testing.TB, role string, out *syncbuf.Buffer, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a %s child: %v", role, err)
	}
	return cmd
}
