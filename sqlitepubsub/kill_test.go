package sqlitepubsub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// The app of the SIGKILL test: a producer writes an order and its three
// messages in one transaction; a worker makes each message's effect (a
// row of done) and claims it in the inbox in one transaction, then acks.
const (
	killBatch  = 3
	killSchema = `CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY);
		CREATE TABLE IF NOT EXISTS done (msg TEXT PRIMARY KEY)`
	killLease = 300 * time.Millisecond
)

func killApp(path string) (*bun.DB, *sqlitepubsub.PubSub, error) {
	db, err := sqlitepubsub.OpenDB(path, "")
	if err != nil {
		return nil, nil, err
	}
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{Lease: killLease, PollInterval: 5 * time.Millisecond})
	if err != nil {
		return nil, nil, err
	}
	if _, err := db.Exec(killSchema); err != nil {
		return nil, nil, err
	}
	return db, ps, nil
}

// produceChild commits orders until killed, printing "committed ID" once
// each commit returned nil.
func produceChild(path string) error {
	db, ps, err := killApp(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	topic := ps.Topic("orders")
	fmt.Println("ready")
	for i := 0; ; i++ {
		id := fmt.Sprintf("%d-%d", os.Getpid(), i)
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
				return err
			}
			batch := make([][]byte, killBatch)
			for j := range batch {
				batch[j] = fmt.Appendf(nil, "%s/%d", id, j)
			}
			return pubsub.EnqueueBatch(sqlitepubsub.WithTx(ctx, tx), topic, batch)
		})
		if err != nil {
			return err
		}
		fmt.Println("committed", id)
	}
}

// workChild handles messages until killed: the effect and the inbox claim
// in one transaction, then the ack.
func workChild(path string) error {
	db, ps, err := killApp(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	topic := ps.Topic("orders")
	fmt.Println("ready")
	for {
		m, err := topic.Dequeue(ctx)
		if err != nil {
			return err
		}
		if err := handle(ctx, db, topic, m); err != nil {
			return err
		}
		if err := m.Ack(ctx); err != nil {
			return err
		}
		fmt.Println("acked", string(m.Data()))
	}
}

func handle(ctx context.Context, db *bun.DB, topic pubsub.Topic, m pubsub.Message) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		tctx := sqlitepubsub.WithTx(ctx, tx)
		first, _, err := pubsub.Claim(tctx, topic, string(m.Data()))
		if err != nil || !first {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO done (msg) VALUES (?)`, string(m.Data()))
		return err
	})
}

// TestSIGKILL kills a producer and a worker process with SIGKILL, twenty
// times, at moments their output picks (after a few commits and acks),
// then drains the file: every order whose commit returned nil is there,
// with its three messages each handled once; no order is there without
// all of its messages, nor a message without its order.
func TestSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kill.db")
	db, ps, err := killApp(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close(); _ = db.Close() })
	committed := map[string]bool{}
	for round := range 20 {
		producer := startChild(t, "producer", path, "ready")
		worker := startChild(t, "worker", path, "ready")
		// Kill after the producer committed 5 + round orders (the worker
		// is then mid-stream), the worker first on odd rounds.
		for n := 0; n < 5+round; {
			l, ok := <-producer.lines
			if !ok {
				t.Fatalf("round %d: producer ended: %v; stderr: %s", round, <-producer.err, producer.stderr.String())
			}
			if id, ok := strings.CutPrefix(l, "committed "); ok {
				committed[id] = true
				n++
			}
		}
		order := []*child{producer, worker}
		if round%2 == 1 {
			order[0], order[1] = worker, producer
		}
		for _, c := range order {
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
		}
		for l := range producer.lines {
			if id, ok := strings.CutPrefix(l, "committed "); ok {
				committed[id] = true
			}
		}
		for range worker.lines {
		}
		<-producer.err
		<-worker.err
	}

	// Drain what the workers left (leased copies come back when their
	// lease runs out), handling each as they did.
	ctx := context.Background()
	topic := ps.Topic("orders")
	for {
		st, err := admin.TopicStats(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready+st.Processing+st.Scheduled == 0 {
			if st.Dead != 0 {
				t.Fatalf("%d dead messages, want none", st.Dead)
			}
			break
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := topic.Dequeue(dctx)
		cancel()
		if err != nil {
			t.Fatalf("drain: %v (stats %+v)", err, st)
		}
		if err := handle(ctx, db, topic, m); err != nil {
			t.Fatal(err)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}

	orders := map[string]bool{}
	rows, err := db.Query(`SELECT id FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		orders[id] = true
	}
	_ = rows.Close()
	done := map[string]int{}
	rows, err = db.Query(`SELECT msg FROM done`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var msg string
		_ = rows.Scan(&msg)
		id, _, _ := strings.Cut(msg, "/")
		done[id]++
	}
	_ = rows.Close()
	for id := range committed {
		if !orders[id] {
			t.Errorf("order %s: its commit returned nil, and it is missing", id)
		}
	}
	for id := range orders {
		if done[id] != killBatch {
			t.Errorf("order %s: %d of its %d messages handled", id, done[id], killBatch)
		}
	}
	for id := range done {
		if !orders[id] {
			t.Errorf("messages of order %s handled, and the order is missing", id)
		}
	}
	handled := 0
	for _, n := range done {
		handled += n
	}
	t.Logf("%d orders committed as the producers said, %d in the file, %d messages handled", len(committed), len(orders), handled)
}
