package relay_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// patience bounds every wait for something that should happen.
const patience = 30 * time.Second

// quiet drops the logs of the expected failures.
var quiet = slog.New(slog.DiscardHandler)

var errRollback = errors.New("rolled back on purpose")

// produced are the payloads a producer committed and rolled back.
type produced struct {
	committed, rolledBack []string
}

// tryProduce enqueues n payloads "prefix-i" on src in transactions of
// perTx messages each, rolling back every fifth transaction.
func tryProduce(db *bun.DB, src pubsub.Topic, prefix string, n, perTx int) (produced, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	var p produced
	for first, tx := 0, 0; first < n; first, tx = first+perTx, tx+1 {
		var batch []string
		for i := first; i < min(first+perTx, n); i++ {
			batch = append(batch, fmt.Sprintf("%s-%d", prefix, i))
		}
		rollback := tx%5 == 4
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, d := range batch {
				if err := src.Enqueue(dbpubsub.WithTx(ctx, tx), []byte(d)); err != nil {
					return err
				}
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		switch {
		case rollback && errors.Is(err, errRollback):
			p.rolledBack = append(p.rolledBack, batch...)
		case err == nil:
			p.committed = append(p.committed, batch...)
		default:
			return p, fmt.Errorf("producer transaction %d: %w", tx, err)
		}
	}
	return p, nil
}

// progress is a count others wait on.
type progress struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed at the next change
	stopped chan struct{} // closed when the count stops for good
}

func newProgress() *progress {
	return &progress{changed: make(chan struct{}), stopped: make(chan struct{})}
}

// add counts one more.
func (p *progress) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *progress) get() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// wait returns once the count is n or more, or with an error when ctx
// ends or the count stopped below n.
func (p *progress) wait(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		got, changed := p.n, p.changed
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-p.stopped:
			if p.get() >= n {
				return nil
			}
			return errors.New("the consumer stopped")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// endMarker is the payload that tells the consumer everything before it
// in the topic's log has been delivered.
const endMarker = "end-of-test"

// consumerGoroutines is how many messages the consumer handles at once,
// each goroutine a share-group member of its own: copies of one message
// may be handled at the same instant, and the inbox still makes one
// effect.
const consumerGoroutines = 4

// consumer consumes a kafkapubsub topic as an app with an inbox does: in
// one transaction of its own database, it claims each message's identity
// (pubsub.Identity, the relayed header pubsub.HeaderMessageID) on the
// inbox of a dbpubsub topic and, when the claim is the first, writes the
// message's effect, a row of handled; then it acks the message.
// kafkapubsub has no inbox of its own.
type consumer struct {
	t       testing.TB
	db      *bun.DB
	topic   pubsub.Topic
	inbox   pubsub.Topic
	handled *progress // first claims: effects made
	dropped atomic.Int64
	total   atomic.Int64 // deliveries
	endOnce sync.Once
	end     chan struct{}
	cancel  context.CancelFunc // ends the Dequeues
	done    chan struct{}
}

// startConsumer starts consuming topic with db as its database, until
// finish.
func startConsumer(t testing.TB, db *bun.DB, topic pubsub.Topic) *consumer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := db.ExecContext(ctx, "CREATE TABLE handled (payload text NOT NULL, identity text NOT NULL)"); err != nil {
		t.Fatalf("creating the consumer's table: %v", err)
	}
	c := &consumer{
		t: t, db: db, topic: topic, handled: newProgress(),
		inbox: dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic("inbox"),
		end:   make(chan struct{}), cancel: cancel, done: make(chan struct{}),
	}
	var wg sync.WaitGroup
	for range consumerGoroutines {
		wg.Go(func() {
			if err := c.run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("consumer: %v", err)
				cancel()
			}
		})
	}
	go func() {
		wg.Wait()
		close(c.handled.stopped)
		close(c.done)
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// run handles messages until ctx ends or one fails. A message in hand is
// handled to its end, on a ctx of its own.
func (c *consumer) run(ctx context.Context) error {
	for {
		m, err := c.topic.Dequeue(ctx)
		if err != nil {
			return fmt.Errorf("Dequeue: %w", err)
		}
		c.total.Add(1)
		if err := c.handle(context.WithoutCancel(ctx), m); err != nil {
			return err
		}
	}
}

// handle makes m's effect if its identity is claimed for the first time,
// and acks it.
func (c *consumer) handle(ctx context.Context, m pubsub.Message) error {
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if string(m.Data()) == endMarker {
		if err := m.Ack(ctx); err != nil {
			return fmt.Errorf("Ack of the end marker: %w", err)
		}
		c.endOnce.Do(func() { close(c.end) })
		return nil
	}
	id := pubsub.MessageHeader(m)[pubsub.HeaderMessageID]
	if id == "" {
		return fmt.Errorf("message %s (%q) came without the header %s", m.ID(), m.Data(), pubsub.HeaderMessageID)
	}
	var first bool
	err := c.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		first, _, err = pubsub.Claim(dbpubsub.WithTx(ctx, tx), c.inbox, pubsub.Identity(m))
		if err != nil || !first {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO handled (payload, identity) VALUES (?, ?)", string(m.Data()), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("handling %q: %w", m.Data(), err)
	}
	if err := m.Ack(ctx); err != nil {
		return fmt.Errorf("Ack of %q: %w", m.Data(), err)
	}
	if first {
		c.handled.add()
	} else {
		c.dropped.Add(1)
	}
	return nil
}

// finish publishes the end marker, waits until the consumer has it, and
// stops the consumer once the messages in hand are handled. It returns
// the deliveries but the marker's, and how many of them the inbox
// dropped. The marker comes after every record published before it in
// the topic's one partition, but for one given back to the cluster
// meanwhile (its lease ran out), which may come later: the count of
// deliveries is a lower bound; the effects are what the test checks.
func (c *consumer) finish(ctx context.Context) (deliveries, dropped int64) {
	c.t.Helper()
	if err := c.topic.Enqueue(ctx, []byte(endMarker)); err != nil {
		c.t.Fatalf("enqueueing the end marker: %v", err)
	}
	select {
	case <-c.end:
	case <-c.done:
		c.t.Fatal("the consumer stopped before the end marker")
	case <-ctx.Done():
		c.t.Fatalf("the end marker: %v", ctx.Err())
	}
	c.cancel()
	<-c.done
	return c.total.Load() - 1, c.dropped.Load()
}

// checkEffects fails t unless the consumer's table has one effect for
// each committed payload and none for a rolled-back one.
func checkEffects(t testing.TB, db *bun.DB, p produced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT payload, count(*) FROM handled GROUP BY payload")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var payload string
		var n int
		if err := rows.Scan(&payload, &n); err != nil {
			t.Fatal(err)
		}
		got[payload] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	missing, twice := 0, 0
	for _, d := range p.committed {
		switch n := got[d]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
		delete(got, d)
	}
	rolledBack := 0
	for _, d := range p.rolledBack {
		rolledBack += got[d]
		delete(got, d)
	}
	if missing != 0 || twice != 0 || rolledBack != 0 || len(got) != 0 {
		t.Errorf("of %d committed messages %d had no effect and %d more than one; %d effects of rolled-back ones; %d of unknown payloads",
			len(p.committed), missing, twice, rolledBack, len(got))
	}
}

// waitFor polls cond every 20 ms until it holds, or fails t.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", 2*patience, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
