package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
)

// TestOpsKafka runs the commands on Kafka (--kafka-brokers, or
// $KAFKA_BROKERS) against a kfake cluster: the dead messages are listed,
// shown, re-queued and deleted, the topics listed; what kafkapubsub cannot
// do (count, peek at live messages, cancel, pause, migrate) is an error naming
// it, with exit code 1 (2 for migrate), never a hang.
func TestOpsKafka(t *testing.T) {
	t.Parallel()
	brokers := kafkapubsubtest.Brokers(t)
	prefix := kafkapubsubtest.Prefix(t, brokers)
	otherPrefix := kafkapubsubtest.Prefix(t, brokers) // where no PubSub made anything
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func() *kafkapubsub.PubSub {
		ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		return ps
	}
	ps := open()
	orders := ps.Topic("orders")
	if err := orders.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme"}), []byte(deadData)); err != nil {
		t.Fatal(err)
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dead := m.ID()
	if err := pubsub.Reject(ctx, m, errors.New(deadReason)); err != nil {
		t.Fatal(err)
	}
	if err := orders.Enqueue(ctx, []byte(ready1Data)); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}

	e := env{vars: map[string]string{"KAFKA_BROKERS": strings.Join(brokers, ",")}}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"PeekDead", []string{"peek", "orders", "--state", "dead"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "DIED AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{dead, "1", anyTime, "20", `"{\"order\":7,\"qty\":-1}"`, `"qty must be positive"`}), nil},
		{"ShowNotDead", []string{"show", "orders", "nosuch"}, 3, "", []string{`"nosuch" is not among the first`,
			"this backend shows dead messages only"}},
		{"PeekReady", []string{"peek", "orders"}, 1, "", []string{"not supported by this backend: peek"}},
		{"Stats", []string{"stats", "orders"}, 1, "", []string{"not supported by this backend: stats"}},
		{"Topics", []string{"topics"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTIONS"},
			[]string{"orders", "default"}), nil},
		{"CancelDead", []string{"cancel", "orders", dead, "--yes"}, 4, "", []string{"is dead: cancel applies to ready or scheduled messages",
			"'conveyor purge TOPIC ID' deletes a dead message."}},
		{"Pause", []string{"pause", "orders"}, 1, "", []string{"not supported by this backend: pause"}},
		{"Migrate", []string{"migrate"}, 2, "", []string{"migrate applies to PostgreSQL only"}},
		{"TwoBackends", []string{"topics", "--sqlite", "app.db"}, 2, "", []string{"--sqlite and --kafka-brokers (or $KAFKA_BROKERS) are set: pick one backend"}},
		{"BadBrokers", []string{"topics", "--kafka-brokers", "kafka"}, 2, "", []string{`--kafka-brokers: kafkapubsub: invalid configuration: broker "kafka"`, "want host:port of each broker"}},
		{"BadPrefix", []string{"stats", "orders", "--prefix", "a.b"}, 2, "", []string{"kafkapubsub: invalid configuration: Options.Prefix"}},
		{"UnknownTopic", []string{"peek", "nosuch", "--state", "dead"}, 3, "", []string{`unknown topic "nosuch" (conveyor topics lists them)`}},
		{"UnknownTopicOtherPrefix", []string{"peek", "orders", "--state", "dead", "--prefix", otherPrefix}, 3, "", []string{`unknown topic "orders"`}},
		// Nothing listens on port 1: the command fails by its --timeout
		// at the latest.
		{"Unreachable", []string{"peek", "orders", "--state", "dead", "--kafka-brokers", "127.0.0.1:1", "--timeout", "3s"}, 1, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !slices.Contains(args, "--prefix") {
				args = append(slices.Clone(args), "--prefix", prefix)
			}
			code, out, errs := runCmd(t, e, args...)
			if code != c.code {
				t.Errorf("conveyor %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, out, errs)
			}
			if c.code == 0 {
				if got := normalize(out); got != c.stdout {
					t.Errorf("conveyor %s: stdout\n%s\nwant\n%s", strings.Join(c.args, " "), got, c.stdout)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("conveyor %s: stderr %q does not say %q", strings.Join(c.args, " "), errs, w)
				}
			}
		})
	}

	// The commands made no topic.
	for _, topic := range []string{"nosuch", "orders"} {
		ps, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: map[string]string{"nosuch": prefix, "orders": otherPrefix}[topic]})
		if err != nil {
			t.Fatal(err)
		}
		found, err := ps.HasTopic(ctx, topic)
		_ = ps.Close()
		if err != nil || found {
			t.Errorf("after the commands on an unknown topic, HasTopic(%q) = %v, %v, want false", topic, found, err)
		}
	}

	// The dead message, whole, with its header.
	code, out, errs := runCmd(t, e, "show", "orders", dead, "--json", "--prefix", prefix)
	if code != 0 || !strings.Contains(out, `"tenant": "acme"`) || !strings.Contains(out, `"last_error": "qty must be positive"`) || !strings.Contains(out, `"state": "dead"`) {
		t.Errorf("show of the dead message on Kafka: exit %d, stdout %q (want its data and header), stderr %q", code, out, errs)
	}
	// Re-queued, it is delivered again (from the subscription's own log:
	// before or after the message that was ready).
	code, out, errs = runCmd(t, e, "requeue", "orders", dead, "--prefix", prefix)
	if code != 0 || out != fmt.Sprintf("Re-queued dead message %s of topic \"orders\".\n", dead) {
		t.Fatalf("requeue on Kafka: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	orders = open().Topic("orders")
	var got []string
	for range 2 {
		m, err := orders.Dequeue(ctx)
		if err != nil {
			t.Fatalf("after the requeue, dequeued %q, then: %v", got, err)
		}
		got = append(got, string(m.Data()))
		if string(m.Data()) == deadData {
			dead = m.ID()
			err = pubsub.Reject(ctx, m, errors.New(deadReason))
		} else {
			err = m.Ack(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if slices.Sort(got); !slices.Equal(got, []string{deadData, ready1Data}) {
		t.Errorf("after the requeue, dequeued %q, want the ready message and the re-queued one", got)
	}
	// Dead again, and deleted.
	code, out, errs = runCmd(t, e, "purge", "orders", dead, "--yes", "--prefix", prefix)
	if code != 0 {
		t.Fatalf("purge on Kafka: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "peek", "orders", "--state", "dead", "--json", "--prefix", prefix)
	if code != 0 || !strings.Contains(out, `"messages": []`) {
		t.Errorf("peek --state dead after the purge: exit %d, stdout %q (want no message), stderr %q", code, out, errs)
	}
}
