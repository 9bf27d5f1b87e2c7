package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// natsConnect returns a PubSub on the server at url with opts, closed in
// t.Cleanup; the expected connection errors stay out of the test output.
func natsConnect(t testing.TB, url string, opts natspubsub.Options) *natspubsub.PubSub {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discard
	}
	ps, err := natspubsub.Connect(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// natsServer is a nats-server with JetStream owned by one test, the Go twin
// of scripts/with-nats.sh: its store in a temporary directory, listening on
// 127.0.0.1 only on a free port, stopped and removed in t.Cleanup. Tests
// that stop, restart or reconfigure a server use one; the others use
// natstest.URL.
type natsServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	URL  string

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
}

const natsInstallHint = "install it (Debian/Ubuntu: apt-get install nats-server; the binary is then /usr/sbin/nats-server)"

// findNatsServer returns the path of nats-server: from PATH, else
// /usr/sbin.
func findNatsServer() (string, error) {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server", nil
	}
	return "", errors.New("nats-server not found in PATH nor in /usr/sbin")
}

// startNatsServer starts a server for t whose max_payload is maxPayload
// bytes (0: the server's default). It fails t, never skips it, when
// nats-server is missing.
func startNatsServer(t testing.TB, maxPayload int) *natsServer {
	t.Helper()
	bin, err := findNatsServer()
	if err != nil {
		t.Fatalf("this test runs a NATS server of its own: %v; %s", err, natsInstallHint)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &natsServer{t: t, bin: bin, dir: t.TempDir(), port: port, URL: fmt.Sprintf("nats://127.0.0.1:%d", port)}
	t.Cleanup(s.kill)
	if err := s.configure(maxPayload); err != nil {
		t.Fatal(err)
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// configure writes the server's configuration, read at its next start.
func (s *natsServer) configure(maxPayload int) error {
	// Lame duck mode (stopLameDuck) closes the clients after a short
	// grace period, one a second at most, then stops.
	conf := fmt.Sprintf("listen: \"127.0.0.1:%d\"\njetstream: {store_dir: %q}\nlame_duck_grace_period: \"500ms\"\n",
		s.port, filepath.Join(s.dir, "store"))
	if maxPayload > 0 {
		conf += fmt.Sprintf("max_payload: %d\n", maxPayload)
	}
	return os.WriteFile(filepath.Join(s.dir, "server.conf"), []byte(conf), 0o600)
}

// start starts the server and waits until its JetStream answers.
func (s *natsServer) start() error {
	cmd := exec.Command(s.bin, "-c", filepath.Join(s.dir, "server.conf"), "-l", filepath.Join(s.dir, "server.log"))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting nats-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		err := s.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("nats-server exited at start (%v); its log:\n%s", err, s.log())
		case <-ctx.Done():
			return fmt.Errorf("nats-server did not answer in %v: %v; its log:\n%s", patience, err, s.log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ready reports whether the server's JetStream answers.
func (s *natsServer) ready(ctx context.Context) error {
	nc, err := nats.Connect(s.URL, nats.Timeout(time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(actx)
	return err
}

// stop stops the server with SIGTERM, which shuts it down at once, and
// waits for it.
func (s *natsServer) stop() error { return s.signal(syscall.SIGTERM) }

// stopLameDuck stops the server the way NATS has operators stop one for a
// restart: SIGUSR2 puts it in lame duck mode, where it takes no new
// client, closes the clients' connections, then shuts down.
func (s *natsServer) stopLameDuck() error { return s.signal(syscall.SIGUSR2) }

func (s *natsServer) signal(sig syscall.Signal) error {
	if err := s.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(patience):
		return fmt.Errorf("nats-server did not stop in %v after %v; its log:\n%s", patience, sig, s.log())
	}
}

// kill stops the server at once, if it runs (t.Cleanup).
func (s *natsServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *natsServer) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Environment of a NATS consumer child (role "nats-consume").
const (
	natsURLEnv     = "RELIABILITY_NATS_URL"
	natsPrefixEnv  = "RELIABILITY_NATS_PREFIX"
	natsTopicEnv   = "RELIABILITY_NATS_TOPIC"
	natsSubEnv     = "RELIABILITY_NATS_SUB"
	natsLeaseEnv   = "RELIABILITY_NATS_LEASE"
	natsWorkersEnv = "RELIABILITY_NATS_WORKERS"
	natsWorkEnv    = "RELIABILITY_NATS_WORK" // how long a delivery is worked on before its Ack
)

// childNatsConsume is a consumer process on a subscription of a NATS
// topic: it subscribes (obtaining the handle every process shares), says
// "READY", then runs workers that dequeue and ack until its stdin closes.
// It prints "GOT <attempt> <payload>" for each delivery, "ACKING …" before
// its Ack and "ACK …" once the server confirmed the Ack, so that the parent
// counts acks per message across processes. A child killed between ACKING
// and ACK may or may not have acked.
func childNatsConsume() error {
	lease, err := time.ParseDuration(os.Getenv(natsLeaseEnv))
	if err != nil {
		return err
	}
	workers, err := strconv.Atoi(os.Getenv(natsWorkersEnv))
	if err != nil {
		return err
	}
	work, err := time.ParseDuration(os.Getenv(natsWorkEnv))
	if err != nil {
		return err
	}
	ps, err := natspubsub.Connect(os.Getenv(natsURLEnv), natspubsub.Options{
		Prefix: os.Getenv(natsPrefixEnv), Lease: lease, Logger: discard,
	})
	if err != nil {
		return err
	}
	defer ps.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sctx, scancel := context.WithTimeout(ctx, patience)
	tp, err := ps.Subscribe(sctx, os.Getenv(natsTopicEnv), os.Getenv(natsSubEnv))
	scancel()
	if err != nil {
		return err
	}
	defer tp.Close()

	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush() // a line is out before the next step: a SIGKILL loses none
	}
	say("READY")
	go func() { // the parent closes stdin to stop the child
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	wg := consumeUntil(ctx, tp, workers, func(m pubsub.Message) {
		a := pubsub.Attempt(m)
		say("GOT %d %s", a, m.Data())
		time.Sleep(work)
		// An Ack under way when the parent says stop is finished, so that
		// what the server took is said.
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), patience)
		defer acancel()
		say("ACKING %d %s", a, m.Data())
		if ackPersistently(actx, m) {
			say("ACK %d %s", a, m.Data())
		}
	})
	wg.Wait()
	return nil
}

// delivery is one line of a consumer child: a delivery or a confirmed Ack.
type delivery struct {
	proc    int // the child's number, in start order
	attempt int
	kind    string // GOT, ACKING or ACK
	payload string
}

// natsConsumers are consumer children of one test on one subscription.
type natsConsumers struct {
	t   testing.TB
	env []string
	out syncbuf.Buffer // the children's stderr

	mu      sync.Mutex
	procs   []*exec.Cmd
	stdins  []io.Closer
	running map[int]bool
	killed  map[int]bool
	lines   []delivery
	ready   int
	exits   []error // by proc; nil until exited
	exited  []bool
	readers sync.WaitGroup
}

// newNatsConsumers returns a set of consumer children on subscription sub
// of topic, each with workers Dequeue+Ack goroutines that work on a
// delivery for work before acking it, and lease. Every child still running
// is killed in t.Cleanup.
func newNatsConsumers(t testing.TB, url, prefix, topic, sub string, workers int, work, lease time.Duration) *natsConsumers {
	c := &natsConsumers{t: t, running: map[int]bool{}, killed: map[int]bool{}, env: []string{
		natsURLEnv + "=" + url, natsPrefixEnv + "=" + prefix, natsTopicEnv + "=" + topic, natsSubEnv + "=" + sub,
		natsWorkersEnv + "=" + strconv.Itoa(workers), natsWorkEnv + "=" + work.String(), natsLeaseEnv + "=" + lease.String(),
	}}
	t.Cleanup(func() {
		c.mu.Lock()
		for p, ok := range c.running {
			if ok {
				_ = c.procs[p].Process.Kill()
			}
		}
		c.mu.Unlock()
		c.readers.Wait()
	})
	return c
}

// start starts one more child and returns its number.
func (c *natsConsumers) start() int {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"=nats-consume"), c.env...)
	cmd.Stderr = &c.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting a consumer child: %v", err)
	}
	c.mu.Lock()
	p := len(c.procs)
	c.procs = append(c.procs, cmd)
	c.stdins = append(c.stdins, stdin)
	c.exits = append(c.exits, nil)
	c.exited = append(c.exited, false)
	c.running[p] = true
	c.mu.Unlock()
	c.readers.Add(1)
	go func() {
		defer c.readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.record(p, sc.Text())
		}
		err := cmd.Wait()
		c.mu.Lock()
		c.exits[p], c.exited[p] = err, true
		c.running[p] = false
		c.mu.Unlock()
	}()
	return p
}

// record counts one line of child p.
func (c *natsConsumers) record(p int, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if line == "READY" {
		c.ready++
		return
	}
	kind, rest, _ := strings.Cut(line, " ")
	n, payload, _ := strings.Cut(rest, " ")
	a, err := strconv.Atoi(n)
	if (kind != "GOT" && kind != "ACKING" && kind != "ACK") || err != nil {
		fmt.Fprintf(&c.out, "child %d: unexpected output %q\n", p, line)
		return
	}
	c.lines = append(c.lines, delivery{proc: p, attempt: a, kind: kind, payload: payload})
}

// kill SIGKILLs child p and returns the deliveries it held, not acked nor
// being acked, once its output is read to the end.
func (c *natsConsumers) kill(ctx context.Context, p int) ([]delivery, error) {
	c.mu.Lock()
	cmd := c.procs[p]
	c.killed[p] = true
	c.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, func() bool { return c.exited[p] }); err != nil {
		return nil, fmt.Errorf("consumer %d did not exit after SIGKILL: %w", p, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var held []delivery
	for _, d := range c.lastLines() {
		if d.proc == p && d.kind == "GOT" {
			held = append(held, d)
		}
	}
	return held, nil
}

// lastLines returns the last line of each child about each payload.
// c.mu is held.
func (c *natsConsumers) lastLines() map[[2]string]delivery {
	last := map[[2]string]delivery{}
	for _, d := range c.lines {
		last[[2]string{strconv.Itoa(d.proc), d.payload}] = d
	}
	return last
}

// settled returns, per payload, the confirmed Acks, and the payloads whose
// Ack was under way in a child when it was killed (in doubt: the server
// may have taken it). c.mu is held.
func (c *natsConsumers) settled() (acks map[string]int, doubt map[string]bool) {
	acks, doubt = map[string]int{}, map[string]bool{}
	for _, d := range c.lines {
		if d.kind == "ACK" {
			acks[d.payload]++
		}
	}
	for _, d := range c.lastLines() {
		if d.kind == "ACKING" && c.killed[d.proc] {
			doubt[d.payload] = true
		}
	}
	return acks, doubt
}

// stop closes the stdin of every running child, which then exits, and
// waits; it returns the errors of the children that failed.
func (c *natsConsumers) stop(ctx context.Context) error {
	c.mu.Lock()
	for p, ok := range c.running {
		if ok {
			_ = c.stdins[p].Close()
		}
	}
	c.mu.Unlock()
	if err := c.waitFor(ctx, func() bool {
		for _, ok := range c.running {
			if ok {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("consumers did not exit when told to: %w", err)
	}
	return nil
}

// failures returns the errors of the children that exited other than by
// stop or kill.
func (c *natsConsumers) failures() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for p, err := range c.exits {
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL) {
			errs = append(errs, fmt.Errorf("consumer %d: %w", p, err))
		}
	}
	return errs
}

// waitFor waits until cond (called with c.mu held) holds, or ctx ends.
func (c *natsConsumers) waitFor(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitReady waits until n children said READY.
func (c *natsConsumers) waitReady(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return c.ready >= n })
}

// acked returns how many distinct payloads were acked, or were being
// acked by a child when it was killed.
func (c *natsConsumers) acked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ackedLocked()
}

func (c *natsConsumers) ackedLocked() int {
	acks, doubt := c.settled()
	n := len(acks)
	for p := range doubt {
		if acks[p] == 0 {
			n++
		}
	}
	return n
}

// waitAcked waits until n distinct payloads were acked (acked()).
func (c *natsConsumers) waitAcked(ctx context.Context, n int) error {
	if err := c.waitFor(ctx, func() bool { return c.ackedLocked() >= n }); err != nil {
		return fmt.Errorf("%d of %d messages acked: %w", c.acked(), n, err)
	}
	return nil
}

// tally is what the children's lines say about payloads want.
type tally struct {
	acks      map[string]int // confirmed Acks per payload
	byProc    map[int]int    // confirmed Acks per child
	lost      int            // payloads of want neither acked nor in doubt
	doubt     int            // payloads of want only in doubt (settled())
	twice     int            // payloads acked more than once
	strangers int            // acked payloads not in want
	redeliv   int            // deliveries with attempt > 1
}

func (c *natsConsumers) tally(want [][]byte) tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	acks, doubt := c.settled()
	r := tally{acks: acks, byProc: map[int]int{}}
	for _, d := range c.lines {
		switch {
		case d.kind == "ACK":
			r.byProc[d.proc]++
		case d.kind == "GOT" && d.attempt > 1:
			r.redeliv++
		}
	}
	known := map[string]bool{}
	for _, w := range want {
		known[string(w)] = true
		switch {
		case acks[string(w)] > 0:
		case doubt[string(w)]:
			r.doubt++
		default:
			r.lost++
		}
	}
	for p, n := range acks {
		if n > 1 {
			r.twice++
		}
		if !known[p] {
			r.strangers++
		}
	}
	return r
}

// cameBack returns the deliveries of held that were delivered again, to
// another child, as a later attempt; and those that needed not come back:
// another child acked an earlier attempt of the message late, after its
// lease ran out and this attempt was delivered (NATS takes a late Ack:
// natspubsub's doc.go), with a confirmed Ack or one under way when it was
// killed.
func (c *natsConsumers) cameBack(held []delivery) (back, ackedLate []delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range held {
		late := false
		for _, d := range c.lines {
			if d.payload != h.payload || d.proc == h.proc {
				continue
			}
			if d.kind == "GOT" && d.attempt > h.attempt {
				back = append(back, h)
				late = false
				break
			}
			if d.kind != "GOT" && d.attempt < h.attempt && (d.kind == "ACK" || c.killed[d.proc]) {
				late = true
			}
		}
		if late {
			ackedLate = append(ackedLate, h)
		}
	}
	return back, ackedLate
}

// history returns, for failure messages, every line the children said
// about the payloads of ds, in order.
func (c *natsConsumers) history(ds []delivery) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	of := map[string]bool{}
	for _, d := range ds {
		of[d.payload] = true
	}
	var b strings.Builder
	for _, d := range c.lines {
		if of[d.payload] {
			fmt.Fprintf(&b, "  child %d (killed %v): %s %d %s\n", d.proc, c.killed[d.proc], d.kind, d.attempt, d.payload)
		}
	}
	return b.String()
}

// enqueueParallel enqueues data on tp with 8 goroutines.
func enqueueParallel(t testing.TB, tp pubsub.Topic, data [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(data); i += 8 {
				if err := tp.Enqueue(ctx, data[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Enqueue: %v", err)
	}
}

// natsState describes the streams and consumers of prefix on the server
// at url, for failure messages.
func natsState(url, prefix string) string {
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	streams := js.ListStreams(ctx)
	for si := range streams.Info() {
		if !strings.HasPrefix(si.Config.Name, prefix) {
			continue
		}
		fmt.Fprintf(&b, "stream %s (%s): %d messages, first seq %d, last seq %d, %d consumers\n", si.Config.Name,
			si.Config.Description, si.State.Msgs, si.State.FirstSeq, si.State.LastSeq, si.State.Consumers)
		s, err := js.Stream(ctx, si.Config.Name)
		if err != nil {
			fmt.Fprintf(&b, "  %v\n", err)
			continue
		}
		cons := s.ListConsumers(ctx)
		for ci := range cons.Info() {
			fmt.Fprintf(&b, "  consumer %s %s: ack wait %v, pending %d, ack pending %d, redelivered %d, waiting %d, delivered %+v, ack floor %+v\n",
				ci.Name, ci.Config.Description, ci.Config.AckWait, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting,
				ci.Delivered, ci.AckFloor)
		}
		if err := cons.Err(); err != nil {
			fmt.Fprintf(&b, "  %v\n", err)
		}
	}
	if err := streams.Err(); err != nil {
		fmt.Fprintf(&b, "%v\n", err)
	}
	return b.String()
}
