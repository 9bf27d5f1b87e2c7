package sqlitepubsub_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// The roles a re-executed test binary plays (TestMain), told by the
// environment: childRole names it, childFile is the database file.
const (
	childRole = "SQLITEPUBSUB_TEST_ROLE"
	childFile = "SQLITEPUBSUB_TEST_FILE"
)

// runChild plays role and returns the process's exit code.
func runChild(role string) int {
	var err error
	switch role {
	case "consumer":
		err = consumeChild(os.Getenv(childFile))
	case "locker":
		err = lockChild(os.Getenv(childFile))
	case "producer":
		err = produceChild(os.Getenv(childFile))
	case "worker":
		err = workChild(os.Getenv(childFile))
	default:
		err = fmt.Errorf("no role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// consumeChild consumes subscription "shared" of topic "jobs", printing
// "acked <data>" for each message it acked, until it finds none for a
// second after the line "drain" arrived on stdin.
func consumeChild(path string) error {
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{Synchronous: "NORMAL", PollInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	defer ps.Close()
	ctx := context.Background()
	sub, err := pubsub.Subscribe(ctx, ps, "jobs", "shared")
	if err != nil {
		return err
	}
	draining := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "drain" {
				close(draining)
				return
			}
		}
	}()
	fmt.Println("ready")
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		m, err := sub.Dequeue(dctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			select {
			case <-draining:
				return nil
			default:
				continue
			}
		}
		if err != nil {
			return err
		}
		if err := m.Ack(ctx); err != nil {
			return fmt.Errorf("ack %s: %w", m.Data(), err)
		}
		fmt.Println("acked", string(m.Data()))
	}
}

// lockChild holds the file's write lock (BEGIN IMMEDIATE) from the line
// "locked" it prints until its stdin closes.
func lockChild(path string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_, err = c.ExecContext(context.Background(), "ROLLBACK")
	return err
}

// child is a re-executed test binary playing a role on a file.
type child struct {
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	lines  chan string // its stdout, line by line; closed at its end
	err    chan error  // its exit
	stderr strings.Builder
}

// startChild starts the test binary as role on path and waits for its
// first line, want.
func startChild(t *testing.T, role, path, want string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRole+"="+role, childFile+"="+path)
	c := &child{cmd: cmd, lines: make(chan string, 1024), err: make(chan error, 1)}
	cmd.Stderr = &c.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Process.Kill()
		for range c.lines {
		}
	})
	select {
	case l, ok := <-c.lines:
		if !ok || l != want {
			t.Fatalf("child %s: first line %q (ok %v), want %q; stderr: %s", role, l, ok, want, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child %s: no %q in 30 s", role, want)
	}
	return c
}

// TestProcessesShareASubscription: three OS processes consume one
// subscription of one file while this one enqueues; every message is
// acked once, by one of them.
func TestProcessesShareASubscription(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx := context.Background()
	if _, err := pubsub.Subscribe(ctx, ps, "jobs", "shared"); err != nil {
		t.Fatal(err)
	}
	const n = 600
	var children []*child
	for range 3 {
		children = append(children, startChild(t, "consumer", path, "ready"))
	}
	jobs := ps.Topic("jobs")
	for i := range n {
		if err := jobs.Enqueue(ctx, fmt.Appendf(nil, "job-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	acked := map[string]int{}
	per := make([]int, len(children))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range children {
		_, _ = c.stdin.(interface{ Write([]byte) (int, error) }).Write([]byte("drain\n"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range c.lines {
				data, ok := strings.CutPrefix(l, "acked ")
				if !ok {
					t.Errorf("child %d: line %q", i, l)
					continue
				}
				mu.Lock()
				acked[data]++
				per[i]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, c := range children {
		if err := <-c.err; err != nil {
			t.Fatalf("child %d: %v; stderr: %s", i, err, c.stderr.String())
		}
	}
	for i := range n {
		if k := acked[fmt.Sprintf("job-%d", i)]; k != 1 {
			t.Errorf("job-%d acked %d times, want 1", i, k)
		}
	}
	if len(acked) != n {
		t.Errorf("%d distinct messages acked, want %d", len(acked), n)
	}
	t.Logf("acks per process: %v", per)
}

// TestLockedFile: while another process holds the file's write lock, a
// write returns by its ctx with an error wrapping ErrBusy and ctx's error,
// reads go on (WAL), and the write succeeds once the lock is released.
func TestLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx := context.Background()
	if err := ps.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	topic := ps.Topic("t")
	locker := startChild(t, "locker", path, "locked")

	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Enqueue", func(ctx context.Context) error { return topic.Enqueue(ctx, []byte("x")) }},
		{"Pause", func(ctx context.Context) error { return admin.Pause(ctx, topic) }},
		{"Subscribe", func(ctx context.Context) error { _, err := pubsub.Subscribe(ctx, ps, "t", "s"); return err }},
	} {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- c.call(cctx) }()
		select {
		case err := <-done:
			t.Logf("%s: %v", c.name, err)
			if !errors.Is(err, sqlitepubsub.ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a locked file: %v, want ErrBusy and context.DeadlineExceeded", c.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s on a locked file did not return 30 s after its ctx of 200 ms", c.name)
		}
		cancel()
	}
	if _, err := admin.TopicStats(ctx, topic); err != nil {
		t.Errorf("Stats (a read) while the file is locked: %v", err)
	}

	_ = locker.stdin.Close()
	if err := <-locker.err; err != nil {
		t.Fatalf("locker: %v; stderr: %s", err, locker.stderr.String())
	}
	if err := topic.Enqueue(ctx, []byte("after")); err != nil {
		t.Fatalf("Enqueue once the lock is released: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := topic.Dequeue(dctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data()) != "after" {
		t.Fatalf("got %q, want the message enqueued after the lock (none before it was written)", m.Data())
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLockedNewFile: the first call on a file another process holds
// locked (its tables not made yet) returns by its ctx, with ErrBusy.
func TestLockedNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	locker := startChild(t, "locker", path, "locked")
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = ps.Topic("t").Enqueue(ctx, []byte("x"))
	if !errors.Is(err, sqlitepubsub.ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first Enqueue on a locked new file: %v, want ErrBusy and context.DeadlineExceeded", err)
	}
	_ = locker.stdin.Close()
	<-locker.err
	if err := ps.Topic("t").Enqueue(context.Background(), []byte("x")); err != nil {
		t.Fatalf("Enqueue once the lock is released: %v", err)
	}
}

// TestCloseEndsWaitingCalls: Close ends a call waiting for a lock another
// process holds (its ctx has no deadline): it returns an error wrapping
// pubsub.ErrClosed, and Close returns once it has, before the file closes.
func TestCloseEndsWaitingCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "close.db")
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ps.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	startChild(t, "locker", path, "locked")
	done := make(chan error, 1)
	go func() { done <- ps.Topic("t").Enqueue(ctx, []byte("x")) }()
	// The enqueue waits for the lock (it cannot finish while the locker
	// holds it); Close must end it.
	closed := make(chan error, 1)
	go func() { closed <- ps.Close() }()
	select {
	case err := <-done:
		if !errors.Is(err, pubsub.ErrClosed) {
			t.Fatalf("Enqueue waiting for the lock when Close came: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Enqueue waiting for the lock did not return 30 s after Close")
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}
