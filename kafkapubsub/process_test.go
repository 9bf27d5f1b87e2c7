package kafkapubsub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// childEnv carries, to a copy of the test binary started as a child
// process, the JSON of its childConfig (TestMain).
const childEnv = "KAFKAPUBSUB_TEST_CHILD"

// childConfig is what a consumer process consumes, and how.
type childConfig struct {
	Brokers []string `json:"brokers"`
	Prefix  string   `json:"prefix"`
	Topic   string   `json:"topic"`
	Sub     string   `json:"sub"`
	Groups  bool     `json:"groups"`  // Options.ConsumerGroups
	Confirm bool     `json:"confirm"` // Options.ConfirmAck
	Workers int      `json:"workers"`
	// Work is how long a worker handles each message before its Ack.
	Work           time.Duration `json:"work"`
	Lease          time.Duration `json:"lease"`
	SessionTimeout time.Duration `json:"session_timeout"`
}

// options are the PubSub options of cfg.
func (cfg childConfig) options() kafkapubsub.Options {
	return kafkapubsub.Options{Brokers: cfg.Brokers, Prefix: cfg.Prefix, ConsumerGroups: cfg.Groups, ConfirmAck: cfg.Confirm,
		Lease: cfg.Lease, SessionTimeout: cfg.SessionTimeout}
}

// runChild is a consumer process: it prints "ready" once subscribed, then
// its workers consume the subscription, each printing for a delivery
// (its data up to the first space, <data>) "got <data> <attempt>", "acking <data>" when its handling is done and it
// calls Ack, then "acked <data>" when Ack returned nil or "ackerr <data>
// <error>". It stops, closing its PubSub, when its stdin closes.
func runChild(raw string) error {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return err
	}
	ps, err := kafkapubsub.New(cfg.options())
	if err != nil {
		return err
	}
	defer ps.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := pubsub.Subscribe(ctx, ps, cfg.Topic, cfg.Sub)
	if err != nil {
		return err
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	say("ready")
	errs := make(chan error, cfg.Workers)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for {
				m, err := sub.Dequeue(ctx)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("dequeue: %w", err)
					cancel()
					return
				}
				attempt := 0
				if a, ok := pubsub.As[pubsub.Attempter](m); ok {
					attempt = a.Attempt()
				}
				data, _, _ := strings.Cut(string(m.Data()), " ")
				say("got %s %d", data, attempt)
				if cfg.Work > 0 {
					t := time.NewTimer(cfg.Work)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
						return
					}
				}
				say("acking %s", data)
				if err := m.Ack(ctx); err != nil {
					say("ackerr %s %s", data, strings.ReplaceAll(err.Error(), "\n", " "))
					continue
				}
				say("acked %s", data)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // the first, nil if none
}

// fleet is the consumer processes of one test and what they said: each
// payload's deliveries and Acks, across processes.
type fleet struct {
	t      *testing.T
	cfg    childConfig
	stderr syncbuf.Buffer // every child's
	// explain, when set, says more when a wait fails (the group, as the
	// cluster describes it).
	explain func() string

	mu      sync.Mutex
	procs   []*proc
	got     map[string]int  // deliveries of each payload
	acked   map[string]int  // Acks that returned nil
	doubt   map[string]bool // an Ack under way when its process was killed
	ackErrs []string
	strange []string      // lines not understood
	changed chan struct{} // closed and replaced at each line and exit
}

// repeats returns the payloads acked more than once and how many
// deliveries were not a payload's first. Called with f.mu held.
func (f *fleet) repeats() (ackedTwice []string, redelivered int) {
	for d, n := range f.acked {
		if n > 1 {
			ackedTwice = append(ackedTwice, d)
		}
	}
	for _, n := range f.got {
		redelivered += n - 1
	}
	return ackedTwice, redelivered
}

// proc is one consumer process.
type proc struct {
	idx    int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{} // closed at its "ready"
	done   chan struct{} // closed once its output is read and its exit known
	err    error         // its exit, once done
	acks   int
	inHand map[string]bool // delivered, no Ack under way
	acking map[string]bool // Ack under way
	killed bool
	closed bool // its stdin was closed: it was told to stop
}

func newFleet(t *testing.T, cfg childConfig) *fleet {
	return &fleet{t: t, cfg: cfg, got: map[string]int{}, acked: map[string]int{}, doubt: map[string]bool{},
		changed: make(chan struct{})}
}

// notifyLocked wakes the waiters. Called with f.mu held.
func (f *fleet) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// start starts one more consumer process and returns it once it said
// "ready".
func (f *fleet) start(ctx context.Context) *proc {
	t := f.t
	t.Helper()
	raw, err := json.Marshal(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = &f.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a consumer process: %v", err)
	}
	f.mu.Lock()
	p := &proc{idx: len(f.procs), cmd: cmd, stdin: stdin, ready: make(chan struct{}), done: make(chan struct{}),
		inHand: map[string]bool{}, acking: map[string]bool{}}
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f.line(p, sc.Text())
		}
		err := cmd.Wait()
		f.mu.Lock()
		p.err = err
		close(p.done)
		f.notifyLocked()
		f.mu.Unlock()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case <-p.ready:
	case <-p.done:
		t.Fatalf("consumer process %d ended before it was ready: %v; output:\n%s", p.idx, p.err, f.stderr.Tail(4000))
	case <-ctx.Done():
		t.Fatalf("consumer process %d not ready: %v; output:\n%s", p.idx, ctx.Err(), f.stderr.Tail(4000))
	}
	return p
}

// line notes what p said.
func (f *fleet) line(p *proc, l string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	verb, rest, _ := strings.Cut(l, " ")
	data, _, _ := strings.Cut(rest, " ")
	switch verb {
	case "ready":
		close(p.ready)
	case "got":
		f.got[data]++
		p.inHand[data] = true
	case "acking":
		delete(p.inHand, data)
		p.acking[data] = true
	case "acked":
		delete(p.acking, data)
		f.acked[data]++
		p.acks++
	case "ackerr":
		delete(p.acking, data)
		f.ackErrs = append(f.ackErrs, fmt.Sprintf("process %d: %s", p.idx, rest))
	default:
		f.strange = append(f.strange, fmt.Sprintf("process %d: %q", p.idx, l))
	}
}

// kill kills p with SIGKILL and returns, once it has exited, the payloads
// it held: delivered, and neither acked nor being acked. An Ack under way
// then may or may not have reached the cluster: its payload is in doubt.
func (f *fleet) kill(p *proc) (held []string) {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		f.t.Fatalf("killing consumer process %d: %v", p.idx, err)
	}
	<-p.done
	f.mu.Lock()
	defer f.mu.Unlock()
	p.killed = true
	for d := range p.acking {
		f.doubt[d] = true
	}
	for d := range p.inHand {
		held = append(held, d)
	}
	return held
}

// waitFor waits until cond, called with f.mu held, is true; it fails when
// ctx ends first, or when a process neither killed nor told to stop
// ended.
func (f *fleet) waitFor(ctx context.Context, what string, cond func() bool) {
	f.t.Helper()
	for {
		f.mu.Lock()
		ok, changed := cond(), f.changed
		var ended *proc
		for _, p := range f.procs {
			select {
			case <-p.done:
				if !p.killed && !p.closed {
					ended = p
				}
			default:
			}
		}
		f.mu.Unlock()
		switch {
		case ok:
			return
		case ended != nil:
			f.t.Fatalf("waiting for %s: consumer process %d ended: %v; output:\n%s", what, ended.idx, ended.err, f.stderr.Tail(4000))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			more := ""
			if f.explain != nil {
				more = "; " + f.explain()
			}
			f.t.Fatalf("waiting for %s: %v; %s%s; output:\n%s", what, ctx.Err(), f.summary(), more, f.stderr.Tail(4000))
		}
	}
}

// handledLocked reports whether payload d was handled: acked, or its Ack
// was under way when its process was killed. Called with f.mu held.
func (f *fleet) handledLocked(d string) bool { return f.acked[d] > 0 || f.doubt[d] }

// allHandled is a condition of waitFor: every payload of data handled.
func (f *fleet) allHandled(data []string) func() bool {
	return func() bool {
		for _, d := range data {
			if !f.handledLocked(d) {
				return false
			}
		}
		return true
	}
}

// summary says how far the fleet got.
func (f *fleet) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	per := make([]int, len(f.procs))
	for i, p := range f.procs {
		per[i] = p.acks
	}
	return fmt.Sprintf("%d payloads delivered, %d acked, %d in doubt; acks per process %v; %d Ack errors",
		len(f.got), len(f.acked), len(f.doubt), per, len(f.ackErrs))
}

// stopWithin is how long a consumer process told to stop may take to exit:
// a second deadline for its PubSub's Close, not a duration asserted.
const stopWithin = 15 * time.Second

// stop tells every process not killed to stop, and checks that each
// exited cleanly, within stopWithin, and that no process reported a race
// or a panic.
func (f *fleet) stop(ctx context.Context) {
	t := f.t
	t.Helper()
	f.mu.Lock()
	var live []*proc
	for _, p := range f.procs {
		if !p.killed {
			p.closed = true
			live = append(live, p)
		}
	}
	f.mu.Unlock()
	for _, p := range live {
		_ = p.stdin.Close()
	}
	watchdog := time.NewTimer(stopWithin)
	defer watchdog.Stop()
	for _, p := range live {
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("consumer process %d, told to stop: %v", p.idx, p.err)
			}
		case <-watchdog.C:
			t.Fatalf("consumer process %d did not exit %v after it was told to stop (its PubSub's Close)", p.idx, stopWithin)
		case <-ctx.Done():
			t.Fatalf("consumer process %d did not stop: %v", p.idx, ctx.Err())
		}
	}
	if out := f.stderr.String(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
		t.Errorf("a consumer process reported a race or a panic:\n%s", out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.strange {
		t.Errorf("a consumer process said %s", l)
	}
}

// payloads returns n payloads "<prefix>-<i>".
func payloads(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return out
}

// enqueueAll enqueues data on tp from four goroutines, each padded to
// size bytes with a space and dots (the consumer processes print the part
// before the space).
func enqueueAll(t *testing.T, ctx context.Context, tp pubsub.Topic, data []string, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(data); i += 4 {
				if err := tp.Enqueue(ctx, pad(data[i], size)); err != nil {
					errs <- fmt.Errorf("Enqueue %s: %w", data[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// pad returns d, then a space and dots up to size bytes.
func pad(d string, size int) []byte {
	b := []byte(d)
	if len(b) >= size {
		return b
	}
	b = append(b, ' ')
	for len(b) < size {
		b = append(b, '.')
	}
	return b
}

// modes are the two ways a subscription can be made: share groups (the
// default) and consumer groups (Options.ConsumerGroups).
var modes = []mode{{name: "ShareGroups"}, {name: "ConsumerGroups", groups: true}}

// confirmModes are modes and share groups with Options.ConfirmAck, in
// which an Ack that returned nil is never undone: the message is not
// acked twice.
var confirmModes = append(slices.Clip(modes), mode{name: "ShareGroupsConfirmAck", confirm: true})

// mode is a way to make a subscription.
type mode struct {
	name    string
	groups  bool // Options.ConsumerGroups
	confirm bool // Options.ConfirmAck
}

const (
	sharedProcesses = 3
	sharedWorkers   = 4
	sharedMessages  = 400
	// sharedLease is long enough that no delivery outlives it.
	sharedLease = time.Minute
	// sharedSession is the session timeout of the consumer-group
	// processes, Kafka's least: each heartbeats every 2 s, and a
	// rebalance waits for a heartbeat of each.
	sharedSession = 6 * time.Second
)

// Three OS processes consume one named subscription together, with four
// workers each, in both modes: every message is acked at least once, none
// is lost. Before the stream, messages are enqueued one at a time until
// each process has acked one: in consumer-group mode, the group has then
// been rebalanced onto all three (each holds partitions; a rebalance takes
// a heartbeat of each member), and the messages delivered again by those
// rebalances are counted. In share-group
// mode no message is acked twice and no Ack fails: the cluster hands each
// record to one member at a time and an accepted one is not delivered
// again.
func TestProcessesShareASubscription(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			brokers := kafkapubsubtest.Brokers(t)
			cfg := childConfig{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), Topic: "jobs", Sub: "workers",
				Groups: mode.groups, Workers: sharedWorkers, Lease: sharedLease, SessionTimeout: sharedSession}
			ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
			defer cancel()
			opts := cfg.options()
			opts.Partitions = sharedProcesses // in consumer-group mode, one for each process
			ps := openGroup(t, opts)
			// Made before the first publish: it gets them all.
			sub, err := pubsub.Subscribe(ctx, ps, cfg.Topic, cfg.Sub)
			if err != nil {
				t.Fatal(err)
			}
			f := newFleet(t, cfg)
			f.explain = func() string { return describeGroup(brokers, cfg.Prefix, mode.groups) }
			for range sharedProcesses {
				f.start(ctx)
			}

			// The warm-up goes to each partition in turn, through a client
			// of its own: Enqueue's partitioner (franz-go's default, as
			// Kafka's) fills one partition with 64 KiB before it moves on.
			warmer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(ps.LogTopic(cfg.Topic)),
				kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer warmer.Close()
			var warm []string
			for i := 0; ; i++ {
				f.mu.Lock()
				all := true
				for _, p := range f.procs {
					all = all && p.acks > 0
				}
				f.mu.Unlock()
				if all {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("%d messages enqueued one at a time, and not every process acked one: %s", i, f.summary())
				}
				d := fmt.Sprintf("w-%d", i)
				if err := warmer.ProduceSync(ctx, &kgo.Record{Value: []byte(d)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				warm = append(warm, d)
				f.waitFor(ctx, "warm-up message "+d+" acked", func() bool { return f.acked[d] > 0 })
			}
			f.mu.Lock()
			before := make([]int, len(f.procs))
			for i, p := range f.procs {
				before[i] = p.acks
			}
			f.mu.Unlock()

			// Of 1 KiB each, so that Enqueue's partitioner moves on every
			// 60 or so.
			data := payloads("m", sharedMessages)
			enqueueAll(t, ctx, sub, data, 1<<10)
			f.waitFor(ctx, "every message acked", f.allHandled(append(data, warm...)))
			f.stop(ctx)

			f.mu.Lock()
			defer f.mu.Unlock()
			twice, redelivered := f.repeats()
			stream := make([]int, len(f.procs))
			for i, p := range f.procs {
				stream[i] = p.acks - before[i]
			}
			t.Logf("%d warm-up messages, then %d; acks per process in the stream %v; %d deliveries again, %d messages acked twice, %d Ack errors",
				len(warm), len(data), stream, redelivered, len(twice), len(f.ackErrs))
			if !mode.groups {
				if len(twice) > 0 {
					t.Errorf("%d messages acked twice (e.g. %s): the cluster hands a record to one member at a time", len(twice), twice[0])
				}
				for _, e := range f.ackErrs {
					t.Errorf("an Ack failed: %s", e)
				}
			}
		})
	}
}
