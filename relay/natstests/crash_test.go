package relay_test

import (
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
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/relay"
)

const (
	crashMessages = 2000
	crashPerTx    = 10 // messages per producer transaction; every fifth is rolled back
	crashKills    = 5  // SIGKILLs of the relay process, each followed by a restart
	crashLease    = time.Second
	crashWorkers  = 4
	crashSource   = "outbox"
	crashDest     = "orders"
	crashDSNEnv   = "RELAY_TEST_DSN"
	crashNATSEnv  = "RELAY_TEST_NATS_URL"
	crashPfxEnv   = "RELAY_TEST_PREFIX"
)

// TestCrashExactlyOnce relays a dbpubsub topic to a natspubsub topic from
// a child process that is killed with SIGKILL several times while the
// producers write (in transactions, some rolled back) and restarted; the
// last one is stopped with SIGTERM once the source is drained. Every
// committed message is in the stream exactly once, and no rolled-back one.
func TestCrashExactlyOnce(t *testing.T) {
	t.Parallel()
	dsn, db := dbpubsubtest.NewStore(t)
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	src := dbpubsubtest.New(t, db, dbpubsub.Options{Logger: quiet}).Topic(crashSource)
	dstPS, err := natspubsub.Connect(url, natspubsub.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dstPS.Close() })
	dst := dstPS.Topic(crashDest)
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()

	var out syncbuf.Buffer
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=relay", crashDSNEnv+"="+dsn, crashNATSEnv+"="+url, crashPfxEnv+"="+prefix)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a relay process: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	// count returns how many of the source's messages are acked, and how
	// many are not.
	count := func() (finished, open int) {
		q := "SELECT count(*) FILTER (WHERE status = 'finished'), count(*) FILTER (WHERE status <> 'finished') FROM " +
			migrations.AllView(dbpubsub.DefaultTable)
		if err := db.DB.QueryRowContext(ctx, q).Scan(&finished, &open); err != nil {
			t.Fatalf("counting the source's messages: %v", err)
		}
		return finished, open
	}

	var p produced
	producing := make(chan error, 1)
	go func() {
		var err error
		p, err = tryProduce(db, src, "m", crashMessages, crashPerTx)
		producing <- err
	}()
	cmd := start()
	// Each relay process is killed once it has relayed 50 to 200 messages
	// (and its workers are likely between a publish and an Ack).
	for kills := 0; kills < crashKills; {
		base, _ := count()
		target := base + 50 + rand.IntN(150)
		for done, _ := count(); done < target; done, _ = count() {
			if ctx.Err() != nil {
				t.Fatalf("%d of %d messages acked after %d kills; relays' output:\n%s", done, target, kills, out.Tail(4000))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("killing the relay: %v", err)
		}
		_ = cmd.Wait()
		kills++
		cmd = start()
	}
	if err := <-producing; err != nil {
		t.Fatal(err)
	}
	for _, open := count(); open != 0; _, open = count() {
		if ctx.Err() != nil {
			t.Fatalf("%d messages of the source still open after the kills; relays' output:\n%s", open, out.Tail(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the last relay, stopped with SIGTERM: %v; its output:\n%s", err, out.Tail(4000))
	}

	got := drain(t, dst, len(p.committed))
	checkExactlyOnce(t, p, got)
	var redelivered int
	q := "SELECT count(*) FROM " + migrations.AllView(dbpubsub.DefaultTable) + " WHERE attempts > 1"
	if err := db.DB.QueryRowContext(ctx, q).Scan(&redelivered); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d committed and %d rolled-back messages, %d kills, %d messages handed out again by the source; last relay: %s",
		len(p.committed), len(p.rolledBack), crashKills, redelivered, strings.TrimSpace(out.Tail(200)))
	// A killed child cannot report a race by its exit status: its output
	// does.
	if o := out.String(); strings.Contains(o, "DATA RACE") || strings.Contains(o, "panic:") {
		t.Errorf("a relay process reported a race or a panic:\n%s", o)
	}
}

// childRelay is a relay process of TestCrashExactlyOnce: it relays until
// SIGTERM (or until killed).
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
	dst, err := natspubsub.Connect(os.Getenv(crashNATSEnv), natspubsub.Options{Prefix: os.Getenv(crashPfxEnv)})
	if err != nil {
		return err
	}
	defer dst.Close()
	r, err := relay.New(ps.Topic(crashSource), dst.Topic(crashDest), relay.Options{Workers: crashWorkers})
	if err != nil {
		return err
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
