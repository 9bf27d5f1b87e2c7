package kafkapubsub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

const (
	faultBatch     = 60 // messages enqueued before each fault, and as many during it
	faultProducers = 2
	faultConsumers = 6
	// faultCallTimeout is the ctx deadline of every Enqueue, Dequeue and
	// Ack.
	faultCallTimeout = 2 * time.Second
	// faultGrace is how long after its ctx ended a call may take to return
	// before it counts as hung: a second deadline, not a duration
	// asserted.
	faultGrace = 15 * time.Second
	// faultLock is the cluster's share-group record lock, and faultSession
	// the consumer groups' session timeout: a delivery whose member lost
	// its broker comes back after them.
	faultLock    = 3 * time.Second
	faultSession = 3 * time.Second
)

// faultCluster is a kfake cluster of three brokers whose brokers the test
// stops and starts again, and which it restarts whole on its DataDir.
type faultCluster struct {
	t     *testing.T
	dir   string
	addrs map[int32]string // each broker's host:port, kept across restarts

	mu    sync.Mutex
	c     *kfake.Cluster
	ports map[string]*port // by host:port
}

// newFaultCluster starts a cluster for t alone, closed when t ends.
func newFaultCluster(t *testing.T) *faultCluster {
	fc := &faultCluster{t: t, dir: t.TempDir(), addrs: map[int32]string{}, ports: map[string]*port{}}
	c := fc.start(nil)
	for i, a := range c.ListenAddrs() {
		fc.addrs[int32(i)] = a // kfake numbers its brokers in order
	}
	t.Cleanup(func() {
		fc.cluster().Close()
		fc.mu.Lock()
		defer fc.mu.Unlock()
		for _, p := range fc.ports {
			_ = p.ln.Close()
		}
	})
	return fc
}

// start starts the cluster on its DataDir, on ports (nil: free ones).
func (fc *faultCluster) start(ports []int) *kfake.Cluster {
	fc.t.Helper()
	configs := maps.Clone(testBrokerConfigs)
	configs["group.share.record.lock.duration.ms"] = strconv.Itoa(int(faultLock.Milliseconds()))
	opts := []kfake.Opt{kfake.NumBrokers(3), kfake.BrokerConfigs(configs), kfake.DataDir(fc.dir),
		kfake.GroupMinSessionTimeout(faultSession / 2), kfake.ListenFn(fc.listen)}
	if ports != nil {
		opts = append(opts, kfake.Ports(ports...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fc.t.Fatalf("starting a kfake cluster: %v", err)
	}
	fc.mu.Lock()
	fc.c = c
	fc.mu.Unlock()
	return c
}

// A broker's port stays bound while the broker is down: else another
// socket of the machine (an outgoing connection's ephemeral port) could
// take it before the broker starts again on it. A connection made to it
// meanwhile is closed at once.

// port is a broker's listening socket, for the test's whole run.
type port struct {
	ln    net.Listener
	mu    sync.Mutex
	owner *keeper // the broker listening on it; nil while it is down
}

// serve hands each connection the port accepts to its broker, or closes
// it, until the port is closed.
func (p *port) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		k := p.owner
		p.mu.Unlock()
		if k == nil || !k.hand(c) {
			_ = c.Close()
		}
	}
}

// keeper is the listener kfake has of a broker on a port: it gets the
// port's connections while the broker runs, and closes them all when
// kfake closes it (the broker stopped).
type keeper struct {
	p      *port
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	accepted []net.Conn
}

// listen is the cluster's ListenFn: a broker's keeper on the port of
// address, bound now or kept from the broker's last run.
func (fc *faultCluster) listen(network, address string) (net.Listener, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	p := fc.ports[address]
	if p == nil {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		p = &port{ln: ln}
		fc.ports[ln.Addr().String()] = p
		go p.serve()
	}
	k := &keeper{p: p, conns: make(chan net.Conn), closed: make(chan struct{})}
	p.mu.Lock()
	p.owner = k
	p.mu.Unlock()
	return k, nil
}

// hand gives c to the broker; false when it stopped.
func (k *keeper) hand(c net.Conn) bool {
	select {
	case k.conns <- c:
		k.mu.Lock()
		k.accepted = append(k.accepted, c)
		k.mu.Unlock()
		return true
	case <-k.closed:
		return false
	}
}

func (k *keeper) Accept() (net.Conn, error) {
	select {
	case c := <-k.conns:
		return c, nil
	case <-k.closed:
		return nil, net.ErrClosed
	}
}

// Close stops the broker's listening, and closes every connection it
// accepted, as a broker that stops does; the port stays bound.
func (k *keeper) Close() error {
	k.once.Do(func() {
		close(k.closed)
		k.p.mu.Lock()
		if k.p.owner == k {
			k.p.owner = nil
		}
		k.p.mu.Unlock()
		k.mu.Lock()
		for _, c := range k.accepted {
			_ = c.Close()
		}
		k.accepted = nil
		k.mu.Unlock()
	})
	return nil
}

func (k *keeper) Addr() net.Addr { return k.p.ln.Addr() }

func (fc *faultCluster) cluster() *kfake.Cluster {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.c
}

// brokers are the cluster's seed brokers.
func (fc *faultCluster) brokers() []string {
	var out []string
	for i := range int32(len(fc.addrs)) {
		out = append(out, fc.addrs[i])
	}
	return out
}

// stopBroker stops broker node as a process that stops would: the cluster
// moves its partitions' leadership and its groups to the others, and the
// broker stops listening and closes every connection it accepted (its
// keeper's Close). The returned function starts it again, with the same
// node ID and port. (kfake's RemoveNode alone closes only the listener: a
// connection to the broker's former incarnation would be answered
// NOT_LEADER_FOR_PARTITION forever.)
func (fc *faultCluster) stopBroker(node int32) (restart func()) {
	t := fc.t
	c := fc.cluster()
	if err := c.RemoveNode(node); err != nil {
		t.Fatalf("stopping broker %d: %v", node, err)
	}
	return func() {
		_, port, _ := net.SplitHostPort(fc.addrs[node])
		p, _ := strconv.Atoi(port)
		if _, _, err := c.AddNode(node, p); err != nil {
			t.Fatalf("starting broker %d again on port %d: %v", node, p, err)
		}
	}
}

// stopAll stops the whole cluster (it saves its state to its DataDir, and
// closes every connection). The returned function starts it again on the
// same ports and DataDir.
func (fc *faultCluster) stopAll() (restart func()) {
	fc.cluster().Close()
	return func() {
		var ports []int
		for _, a := range fc.brokers() {
			_, port, _ := net.SplitHostPort(a)
			p, _ := strconv.Atoi(port)
			ports = append(ports, p)
		}
		fc.start(ports)
	}
}

// callLog keeps what the calls of the broker test returned.
type callLog struct {
	mu         sync.Mutex
	hung       []string
	sentinels  []error        // errors that blame the caller
	failed     map[string]int // calls that failed or hung
	firstError map[string]error
	lastError  map[string]error
	changed    chan struct{}
}

func newCallLog() *callLog {
	return &callLog{failed: map[string]int{}, firstError: map[string]error{}, lastError: map[string]error{}, changed: make(chan struct{})}
}

// call runs f with a ctx ending after faultCallTimeout, and returns its
// error once it returned, or, when it did not return within faultGrace
// after that, notes it hung and returns context.DeadlineExceeded (f goes
// on in the background).
func (l *callLog) call(parent context.Context, what string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, faultCallTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	watchdog := time.NewTimer(faultCallTimeout + faultGrace)
	defer watchdog.Stop()
	var err error
	select {
	case err = <-done:
	case <-watchdog.C:
		l.mu.Lock()
		l.hung = append(l.hung, fmt.Sprintf("%s did not return %v after its ctx ended", what, faultGrace))
		l.failed[what]++
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
		return context.DeadlineExceeded
	}
	if err == nil || parent.Err() != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed[what]++
	if l.firstError[what] == nil {
		l.firstError[what] = err
	}
	l.lastError[what] = err
	if errorsIsAny(err, pubsub.ErrClosed, pubsub.ErrInvalidTopic, pubsub.ErrInvalidSubscription, pubsub.ErrTooLarge,
		pubsub.ErrNoSubscription, pubsub.ErrSettled, kafkapubsub.ErrInvalidConfig) {
		l.sentinels = append(l.sentinels, fmt.Errorf("%s: %w", what, err))
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return err
}

// A broker of the three is stopped and started again, then the broker
// that coordinates the subscription's group, then the whole cluster is
// restarted on its DataDir, in both modes, while producers enqueue and
// consumers dequeue and ack, each call with a ctx deadline: no call
// returns later than faultGrace after its ctx ended (a second deadline),
// none fails with a sentinel error that blames the caller, and every
// message whose Enqueue returned nil is delivered and acked (or its Ack
// was called and failed, and the cluster settled it: the group has
// settled every record at the end). What failed is retried, as an
// application would; a message enqueued again after a failed Enqueue
// that had been stored all the same is delivered twice, counted. In
// share-group mode with Options.ConfirmAck no message is acked twice;
// without it, an Ack queued when its broker stopped is lost and its
// record delivered again, counted. In consumer-group mode a
// message is delivered again when its partition moved before its commit,
// and franz-go reads a partition again from its start when kfake, after
// its leader moved, answers OffsetForLeaderEpoch as if the log had been
// truncated ("lost records"): counted.
//
// With a broker of three down, calls go on: the cluster moves its
// partitions and groups to the others, and each fault lasts until half
// the messages enqueued during it were acked. The whole cluster down
// lasts until an Enqueue failed.
//
// The test runs on a kfake cluster of its own, whatever $KAFKA_BROKERS
// says: it stops brokers.
func TestBrokerRestart(t *testing.T) {
	for _, mode := range confirmModes {
		if !mode.groups && !mode.confirm {
			// Share groups run with ConfirmAck only (a cluster of its
			// own per mode): without it the one difference is that
			// Acks queued at a fault are lost and their records come
			// back, which TestConsumerSIGKILL shows.
			continue
		}
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			fc := newFaultCluster(t)
			brokers := fc.brokers()
			var logs syncbuf.Buffer // what the PubSubs log of the faults, shown if the test fails
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the PubSubs' log:\n%s", logs.Tail(8000))
				}
			})
			opts := kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), ConsumerGroups: mode.groups,
				ConfirmAck: mode.confirm, Partitions: 3, Lease: 10 * time.Second, RecordLock: faultLock, SessionTimeout: faultSession,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			ctx, cancel := context.WithTimeout(context.Background(), 6*patience)
			defer cancel()
			producer := openGroup(t, opts)
			tp, err := pubsub.Subscribe(ctx, producer, "orders", "billing")
			if err != nil {
				t.Fatal(err)
			}
			consumer := openGroup(t, opts)
			sub, err := pubsub.Subscribe(ctx, consumer, "orders", "billing")
			if err != nil {
				t.Fatal(err)
			}

			calls := newCallLog()
			var mu sync.Mutex
			changed := make(chan struct{})
			got, acked, ackFailed := map[string]int{}, map[string]int{}, map[string]bool{}
			ackedIDs := map[string]int{}          // Acks that returned nil, of each message ID
			idsOf := map[string]map[string]bool{} // the message IDs each payload was delivered with
			note := func(f func()) {
				mu.Lock()
				defer mu.Unlock()
				f()
				close(changed)
				changed = make(chan struct{})
			}
			cctx, stopConsumers := context.WithCancel(ctx)
			var cwg sync.WaitGroup
			for range faultConsumers {
				cwg.Go(func() {
					for cctx.Err() == nil {
						var m pubsub.Message
						err := calls.call(cctx, "Dequeue", func(ctx context.Context) (err error) {
							m, err = sub.Dequeue(ctx)
							return err
						})
						if err != nil {
							continue
						}
						d, id := string(m.Data()), m.ID()
						note(func() {
							got[d]++
							if idsOf[d] == nil {
								idsOf[d] = map[string]bool{}
							}
							idsOf[d][id] = true
						})
						err = calls.call(cctx, "Ack", m.Ack)
						note(func() {
							if err == nil {
								acked[d]++
								ackedIDs[id]++
							} else {
								ackFailed[d] = true
							}
						})
					}
				})
			}
			// waitFor waits until cond, called with mu held, is true.
			waitFor := func(what string, cond func() bool) {
				t.Helper()
				for {
					mu.Lock()
					ok, ch := cond(), changed
					mu.Unlock()
					if ok {
						return
					}
					select {
					case <-ch:
					case <-ctx.Done():
						mu.Lock()
						t.Fatalf("waiting for %s: %v; %d payloads delivered, %d acked", what, ctx.Err(), len(got), len(acked))
					}
				}
			}
			handled := func(d string) bool { return acked[d] > 0 || ackFailed[d] }
			// enqueue enqueues batch from faultProducers goroutines, each
			// payload again until its Enqueue returns nil.
			enqueue := func(batch []string) error {
				var wg sync.WaitGroup
				for w := range faultProducers {
					wg.Go(func() {
						for i := w; i < len(batch); i += faultProducers {
							for ctx.Err() == nil {
								err := calls.call(ctx, "Enqueue", func(ctx context.Context) error { return tp.Enqueue(ctx, []byte(batch[i])) })
								if err == nil {
									break
								}
							}
						}
					})
				}
				wg.Wait()
				if ctx.Err() != nil {
					return fmt.Errorf("enqueueing: %w", ctx.Err())
				}
				return nil
			}
			halfHandled := func(batch []string) func() bool {
				return func() bool {
					n := 0
					for _, d := range batch {
						if handled(d) {
							n++
						}
					}
					return n >= len(batch)/2
				}
			}

			adm := kadm.NewClient(newClient(t, brokers))
			kind := "g"
			if mode.groups {
				kind = "c"
			}
			group := groupOf(t, ctx, adm, opts.Prefix, kind)
			faults := []struct {
				name string
				stop func() (restart func())
			}{
				{"the leader of the log's partition 0", func() func() { return fc.stopBroker(fc.cluster().LeaderFor(producer.LogTopic("orders"), 0)) }},
				{"the coordinator of the group", func() func() { return fc.stopBroker(fc.cluster().CoordinatorFor(group)) }},
				{"the whole cluster", fc.stopAll},
			}
			var all []string
			t0 := time.Now() // the phases' times are logged, for a failure past the deadline
			for i, fault := range faults {
				before := payloads(fmt.Sprintf("f%d-before", i), faultBatch)
				all = append(all, before...)
				if err := enqueue(before); err != nil {
					calls.mu.Lock()
					t.Fatalf("before fault %d (%s): %v; failed calls %v, last errors %v, hung %v", i, fault.name, err, calls.failed, calls.lastError, calls.hung)
				}
				waitFor("half of the messages before fault "+fault.name+" handled", halfHandled(before))
				t.Logf("%s: half handled before fault %s", time.Since(t0), fault.name)
				calls.mu.Lock()
				failedBefore := calls.failed["Enqueue"]
				calls.mu.Unlock()
				restart := fault.stop()
				during := payloads(fmt.Sprintf("f%d-during", i), faultBatch)
				all = append(all, during...)
				if fault.name != "the whole cluster" {
					if err := enqueue(during); err != nil {
						t.Fatal(err)
					}
					waitFor("half of the messages during fault "+fault.name+" handled", halfHandled(during))
					t.Logf("%s: half handled during fault %s", time.Since(t0), fault.name)
					restart()
					continue
				}
				// Down until an Enqueue failed (or hung); its producer
				// retries it after the restart.
				enqueued := make(chan error, 1)
				go func() { enqueued <- enqueue(during) }()
				for {
					calls.mu.Lock()
					failed, ch := calls.failed["Enqueue"], calls.changed
					calls.mu.Unlock()
					if failed > failedBefore {
						break
					}
					select {
					case <-ch:
					case <-ctx.Done():
						t.Fatalf("no Enqueue failed with the whole cluster down: %v", ctx.Err())
					}
				}
				t.Logf("%s: an Enqueue failed with the whole cluster down", time.Since(t0))
				restart()
				if err := <-enqueued; err != nil {
					t.Fatal(err)
				}
			}
			waitFor("every message handled", func() bool {
				for _, d := range all {
					if !handled(d) {
						return false
					}
				}
				return true
			})
			t.Logf("%s: every message handled", time.Since(t0))
			waitDrained(t, ctx, brokers, opts.Prefix, mode.groups)
			stopConsumers()
			cwg.Wait()

			calls.mu.Lock()
			defer calls.mu.Unlock()
			for _, h := range calls.hung {
				t.Error(h)
			}
			for _, err := range calls.sentinels {
				t.Errorf("a call failed with %v during the faults: a retryable error, not one that blames the caller, was due", err)
			}
			mu.Lock()
			defer mu.Unlock()
			again, stored, doubt := 0, 0, 0
			for _, n := range got {
				again += n - 1
			}
			var twice []string
			for id, n := range ackedIDs {
				if n > 1 {
					twice = append(twice, id)
				}
			}
			for _, d := range all {
				if len(idsOf[d]) > 1 {
					stored++ // enqueued again after a failed Enqueue that was stored all the same
				}
				if acked[d] == 0 {
					doubt++
				}
			}
			t.Logf("%d messages over %d faults; failed calls %v (first errors %v); %d deliveries again: %d messages acked twice, "+
				"%d payloads enqueued twice (a failed Enqueue had been stored); %d whose Ack failed and that were not delivered again (the cluster took the Ack)",
				len(all), len(faults), calls.failed, calls.firstError, again, len(twice), stored, doubt)
			if mode.confirm && len(twice) > 0 {
				t.Errorf("%d messages acked twice (e.g. %s): with ConfirmAck an accepted record is not delivered again", len(twice), twice[0])
			}
		})
	}
}

// newClient returns a franz-go client of brokers, closed when t ends.
func newClient(t testing.TB, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// errorsIsAny reports whether err wraps one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
