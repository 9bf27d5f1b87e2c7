package relay_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/relay"
)

const (
	crashMessages = 2000
	crashPerTx    = 10 // messages per producer transaction; every fifth is rolled back
	crashKills    = 10 // SIGKILLs of the relay process, each followed by a restart
	crashLease    = time.Second
	crashWorkers  = 4
	crashSource   = "outbox"
	crashDest     = "orders"
	crashDSNEnv   = "RELAY_KAFKA_TEST_DSN"
	crashKafkaEnv = "RELAY_KAFKA_TEST_BROKERS"
	crashPfxEnv   = "RELAY_KAFKA_TEST_PREFIX"
)

// TestCrashInboxExactlyOnce relays a dbpubsub outbox to a kafkapubsub
// topic, which cannot enqueue under a key, from a child process that is
// killed with SIGKILL several times while the producers write (in
// transactions, some rolled back) and restarted; the last one is stopped
// with SIGTERM once the source is drained. The topic may hold a message
// twice (published by a killed relay, not acked in the source, published
// again by the next); a consumer that claims each message's identity in
// its own PostgreSQL transaction, with its effect, makes the effect of
// every committed message exactly once, and of no rolled-back one.
func TestCrashInboxExactlyOnce(t *testing.T) {
	t.Parallel()
	dsn, outboxDB := dbpubsubtest.NewStore(t)
	_, appDB := dbpubsubtest.NewStore(t) // the consumer's database, another schema
	brokers := kafkapubsubtest.Brokers(t)
	prefix := kafkapubsubtest.Prefix(t, brokers)
	src := dbpubsubtest.New(t, outboxDB, dbpubsub.Options{Logger: quiet}).Topic(crashSource)
	ctx, cancel := context.WithTimeout(context.Background(), 8*patience)
	defer cancel()

	dstPS, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dstPS.Close() })
	c := startConsumer(t, appDB, dstPS.Topic(crashDest))

	var out syncbuf.Buffer
	// start starts a relay process, and returns it with the count of its
	// publishes the cluster acknowledged, each a line published on its
	// standard output (the rest of which goes to out).
	type relayProc struct {
		cmd       *exec.Cmd
		published *progress
		scanned   chan struct{} // closed once its output is read
	}
	start := func() relayProc {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=relay", crashDSNEnv+"="+dsn,
			crashKafkaEnv+"="+strings.Join(brokers, ","), crashPfxEnv+"="+prefix)
		cmd.Stderr = &out
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a relay process: %v", err)
		}
		published := newProgress()
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			defer close(published.stopped)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if sc.Text() == publishedLine {
					published.add()
				} else {
					fmt.Fprintln(&out, sc.Text())
				}
			}
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-scanned; _ = cmd.Wait() })
		return relayProc{cmd, published, scanned}
	}
	// stop signals p and returns its exit's error, once its output is
	// read (Wait closes the pipe).
	stop := func(p relayProc, sig os.Signal) error {
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signalling the relay: %v", err)
		}
		<-p.scanned
		return p.cmd.Wait()
	}

	var p produced
	producing := make(chan error, 1)
	go func() {
		var err error
		p, err = tryProduce(outboxDB, src, "m", crashMessages, crashPerTx)
		producing <- err
	}()
	proc := start()
	// Each relay process is killed once the cluster acknowledged 20 to 80
	// of its publishes: its workers are then likely between a publish and
	// the source's Ack.
	for kills := 0; kills < crashKills; kills++ {
		target := 20 + rand.IntN(60)
		if err := proc.published.wait(ctx, target); err != nil {
			t.Fatalf("relay process %d: %d of %d publishes (%v); relays' output:\n%s", kills+1, proc.published.get(), target, err, out.Tail(4000))
		}
		_ = stop(proc, syscall.SIGKILL)
		proc = start()
	}
	if err := <-producing; err != nil {
		t.Fatal(err)
	}
	if err := c.handled.wait(ctx, len(p.committed)); err != nil {
		t.Fatalf("%d of %d committed messages handled after the kills (%v); relays' output:\n%s", c.handled.get(), len(p.committed), err, out.Tail(4000))
	}
	// The source is drained once the last relay has acked the messages
	// the killed ones held: their leases run out, and the last relay
	// publishes them again (copies the inbox drops).
	waitFor(t, "the source drained", func() bool {
		var open int
		q := "SELECT count(*) FROM " + migrations.AllView(dbpubsub.DefaultTable) + " WHERE status <> 'finished'"
		if err := outboxDB.DB.QueryRowContext(ctx, q).Scan(&open); err != nil {
			t.Fatalf("counting the source's open messages: %v", err)
		}
		return open == 0
	})
	if err := stop(proc, syscall.SIGTERM); err != nil {
		t.Fatalf("the last relay, stopped with SIGTERM: %v; its output:\n%s", err, out.Tail(4000))
	}
	// Every copy the relays published is in the topic's one partition
	// before the end marker.
	deliveries, dropped := c.finish(ctx)

	checkEffects(t, appDB, p)
	var redelivered int
	q := "SELECT count(*) FROM " + migrations.AllView(dbpubsub.DefaultTable) + " WHERE attempts > 1"
	if err := outboxDB.DB.QueryRowContext(ctx, q).Scan(&redelivered); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d committed and %d rolled-back messages, %d kills, %d handed out again by the source; "+
		"the consumer had %d deliveries, %d of them copies its inbox dropped; last relay: %s",
		len(p.committed), len(p.rolledBack), crashKills, redelivered, deliveries, dropped, strings.TrimSpace(out.Tail(200)))
	// A killed child cannot report a race by its exit status: its output
	// does.
	if o := out.String(); strings.Contains(o, "DATA RACE") || strings.Contains(o, "panic:") {
		t.Errorf("a relay process reported a race or a panic:\n%s", o)
	}
}

// childRelay is a relay process of TestCrashInboxExactlyOnce: it relays
// until SIGTERM (or until killed).
func childRelay() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := dbpubsub.Open(os.Getenv(crashDSNEnv))
	if err != nil {
		return err
	}
	defer db.Close()
	ps, err := dbpubsub.New(db, dbpubsub.Options{Lease: crashLease, RescueInterval: crashLease / 5, PollInterval: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer ps.Close()
	dst, err := kafkapubsub.New(kafkapubsub.Options{
		Brokers: strings.Split(os.Getenv(crashKafkaEnv), ","), Prefix: os.Getenv(crashPfxEnv), Logger: quiet,
	})
	if err != nil {
		return err
	}
	defer dst.Close()
	r, err := relay.New(ps.Topic(crashSource), announced{dst.Topic(crashDest)}, relay.Options{Workers: crashWorkers})
	if err != nil {
		return err
	}
	if r.Unique() {
		return errors.New("a kafkapubsub destination reports unique enqueue")
	}
	if err := r.Run(ctx); err != nil {
		return err
	}
	s := r.Stats()
	fmt.Printf("relay stats: %+v\n", s)
	if s.Rejected != 0 {
		return errors.New("the relay rejected messages")
	}
	return nil
}

// publishedLine is what a relay process prints for each publish the
// cluster acknowledged.
const publishedLine = "published"

// announced is a relay process's destination: it prints publishedLine
// once the destination has a message. Through Unwrap the relay finds
// what the destination offers (no unique enqueue on kafkapubsub).
type announced struct{ pubsub.Topic }

func (a announced) Unwrap() pubsub.Topic { return a.Topic }

func (a announced) Enqueue(ctx context.Context, data []byte) error {
	if err := a.Topic.Enqueue(ctx, data); err != nil {
		return err
	}
	_, err := fmt.Println(publishedLine)
	return err
}
