package kafkapubsub_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

const (
	killProcesses = 3  // consumer processes running at any time
	killWorkers   = 3  // Dequeue+Ack goroutines of each
	killRounds    = 10 // SIGKILLs, each followed by a restart
	killPerRound  = 60 // messages enqueued in each round
	// killWork is how long a consumer handles a delivery before its Ack:
	// a kill finds deliveries in hand.
	killWork = 10 * time.Millisecond
	// killSession is the consumer-group session timeout on the test's own
	// cluster: how long a killed process holds its partitions.
	killSession = 2 * time.Second
)

// killCluster returns the brokers of the SIGKILL test and the session
// timeout its consumer-group processes use: $KAFKA_BROKERS and Kafka's
// least (group.min.session.timeout.ms, 6 s) when set, else a kfake cluster
// of the test's own that takes killSession.
func killCluster(t *testing.T) ([]string, time.Duration) {
	if os.Getenv("KAFKA_BROKERS") != "" {
		return kafkapubsubtest.Brokers(t), 6 * time.Second
	}
	return ownCluster(t, nil, kfake.GroupMinSessionTimeout(killSession/2)).ListenAddrs(), killSession
}

// Consumer processes are killed with SIGKILL ten times while a stream of
// messages is consumed, each replaced by a new one, in both modes. Each
// round enqueues 60 messages and kills, once half of them are handled,
// the process that holds the most deliveries. Nothing is lost: every
// message is acked, or its Ack was under way when its process was killed
// (in doubt: whether it reached the cluster is not known); the cluster
// then holds nothing unsettled; and the deliveries the killed processes
// held came back to the others.
//
// Duplicates are counted. In share-group mode with Options.ConfirmAck no
// message is acked twice: an Ack returns once the cluster accepted the
// record, which is not delivered again. Without it an Ack returns once
// queued, and a killed process's queued Acks are lost: their records come
// back. In consumer-group mode an Ack returns before its commit: a killed
// process's partitions go to the others after its session timeout, from
// the last committed mark, and what it acked above that mark is delivered
// again.
func TestConsumerSIGKILL(t *testing.T) {
	for _, mode := range confirmModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			brokers, session := killCluster(t)
			prefix := kafkapubsubtest.Prefix(t, brokers)
			cfg := childConfig{Brokers: brokers, Prefix: prefix, Topic: "stream", Sub: "workers",
				Groups: mode.groups, Confirm: mode.confirm, Workers: killWorkers, Work: killWork, Lease: time.Minute, SessionTimeout: session}
			ctx, cancel := context.WithTimeout(context.Background(), 6*patience)
			defer cancel()
			opts := cfg.options()
			opts.Partitions = killProcesses
			ps := openGroup(t, opts)
			sub, err := pubsub.Subscribe(ctx, ps, cfg.Topic, cfg.Sub)
			if err != nil {
				t.Fatal(err)
			}
			f := newFleet(t, cfg)
			for range killProcesses {
				f.start(ctx)
			}

			var all, held []string
			for round := range killRounds {
				data := payloads(fmt.Sprintf("r%d", round), killPerRound)
				all = append(all, data...)
				enqueueAll(t, ctx, sub, data, 1<<10)
				f.waitFor(ctx, fmt.Sprintf("half of round %d's messages handled", round), func() bool {
					n := 0
					for _, d := range data {
						if f.handledLocked(d) {
							n++
						}
					}
					return n >= len(data)/2
				})
				held = append(held, f.kill(f.busiest())...)
				f.start(ctx)
			}
			f.waitFor(ctx, "every message handled", f.allHandled(all))
			waitDrained(t, ctx, brokers, prefix, mode.groups)
			f.stop(ctx)

			f.mu.Lock()
			defer f.mu.Unlock()
			var notBack []string
			for _, d := range held {
				if f.got[d] < 2 {
					notBack = append(notBack, d)
				}
			}
			if len(held) == 0 || len(notBack) > 0 {
				t.Errorf("the killed processes held %d deliveries; %d did not come back (%v): want some, and all back", len(held), len(notBack), notBack)
			}
			twice, again := f.repeats()
			inDoubt := 0
			for d := range f.doubt {
				if f.acked[d] == 0 {
					inDoubt++
				}
			}
			t.Logf("%d messages, %d kills: the killed held %d deliveries, all came back; %d Acks under way at a kill, "+
				"%d of them never acked after (taken by the cluster); %d deliveries again, %d messages acked twice, %d Ack errors",
				len(all), killRounds, len(held), len(f.doubt), inDoubt, again, len(twice), len(f.ackErrs))
			if mode.confirm && len(twice) > 0 {
				t.Errorf("%d messages acked twice (e.g. %s): with ConfirmAck an accepted record is not delivered again", len(twice), twice[0])
			}
		})
	}
}

// busiest returns the live process that holds the most deliveries (in
// hand or being acked).
func (f *fleet) busiest() *proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *proc
	for _, p := range f.procs {
		if p.killed || p.closed {
			continue
		}
		if best == nil || len(p.inHand)+len(p.acking) > len(best.inHand)+len(best.acking) {
			best = p
		}
	}
	return best
}
