package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRelays runs the command on a topic holding messages, reads them
// from the stream, and stops it as SIGTERM would.
func TestRelays(t *testing.T) {
	dsn, db := dbpubsubtest.NewStore(t)
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	src := dbpubsubtest.New(t, db, dbpubsub.Options{}).Topic("orders")
	ctx := context.Background()
	const n = 20
	for i := range n {
		if err := src.Enqueue(ctx, []byte(fmt.Sprint("order-", i))); err != nil {
			t.Fatal(err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, []string{"-dsn", dsn, "-nats", url, "-prefix", prefix, "-topic", "orders", "-to", "shipments"}, &out)
	}()

	dst, err := natspubsub.Connect(url, natspubsub.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	got := map[string]bool{}
	for len(got) < n {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := dst.Topic("shipments").Dequeue(dctx)
		cancel()
		if err != nil {
			stop()
			t.Fatalf("after %d of %d messages: %v; the command's output:\n%s", len(got), n, err, out.String())
		}
		got[string(m.Data())] = true
		_ = m.Ack(ctx)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run after its ctx ended = %v; output:\n%s", err, out.String())
	}
	if want := fmt.Sprintf("relayed=%d", n); !strings.Contains(out.String(), want) {
		t.Errorf("the command's output says nothing like %q:\n%s", want, out.String())
	}
}

// TestRelaysToKafka runs the command with -kafka on a topic holding
// messages, reads them from the Kafka topic (a kfake cluster, or
// $KAFKA_BROKERS), each with its row's identity, and stops it as SIGTERM
// would; once for consumers of each mode, started once every message is
// relayed: the relay's first publish made the default subscription (a
// reserve), a consumer group with -kafka-consumer-groups, else a share
// group, and a consumer of the other mode is refused it.
func TestRelaysToKafka(t *testing.T) {
	t.Setenv("NATS_URL", "nats://127.0.0.1:1") // not used: -kafka wins over the environment's NATS
	t.Run("share groups", func(t *testing.T) { testRelaysToKafka(t, false) })
	t.Run("consumer groups", func(t *testing.T) { testRelaysToKafka(t, true) })
}

func testRelaysToKafka(t *testing.T, groups bool) {
	dsn, db := dbpubsubtest.NewStore(t)
	brokers := kafkapubsubtest.Brokers(t)
	prefix := kafkapubsubtest.Prefix(t, brokers)
	src := dbpubsubtest.New(t, db, dbpubsub.Options{}).Topic("orders")
	ctx := context.Background()
	const n = 20
	for i := range n {
		if err := src.Enqueue(ctx, []byte(fmt.Sprint("order-", i))); err != nil {
			t.Fatal(err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		args := []string{"-dsn", dsn, "-kafka", strings.Join(brokers, ","), "-prefix", prefix, "-topic", "orders", "-to", "shipments"}
		if groups {
			args = append(args, "-kafka-consumer-groups")
		}
		done <- run(rctx, args, &out)
	}()
	for { // every message relayed (acked at the source once published)
		st, err := admin.TopicStats(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready+st.Processing+st.Scheduled == 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run = %v before relaying every message; output:\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}

	dst, err := kafkapubsub.New(kafkapubsub.Options{Brokers: brokers, Prefix: prefix, ConsumerGroups: groups})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	got := map[string]bool{}
	for len(got) < n {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := dst.Topic("shipments").Dequeue(dctx)
		cancel()
		if err != nil {
			stop()
			<-done
			t.Fatalf("after %d of %d messages: %v; the command's output:\n%s", len(got), n, err, out.String())
		}
		if pubsub.MessageHeader(m)[pubsub.HeaderMessageID] == "" {
			t.Errorf("message %q came without its identity", m.Data())
		}
		got[string(m.Data())] = true
		_ = m.Ack(ctx)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run after its ctx ended = %v; output:\n%s", err, out.String())
	}
	for _, want := range []string{"unique=false", fmt.Sprintf("relayed=%d", n)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the command's output says nothing like %q:\n%s", want, out.String())
		}
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no topic", []string{"-dsn", "postgres://x", "-nats", "nats://x"}, "-topic is required"},
		{"no DSN", []string{"-topic", "t", "-dsn", "", "-nats", "nats://x"}, "no DSN"},
		{"no NATS", []string{"-topic", "t", "-dsn", "postgres://x", "-nats", ""}, "no NATS server"},
		{"NATS and Kafka", []string{"-topic", "t", "-dsn", "postgres://x", "-nats", "nats://x", "-kafka", "127.0.0.1:9092"}, "not both"},
		{"consumer groups without Kafka", []string{"-topic", "t", "-dsn", "postgres://x", "-nats", "nats://x", "-kafka-consumer-groups"}, "pass -kafka"},
		{"an argument", []string{"-topic", "t", "-dsn", "postgres://x", "-nats", "nats://x", "extra"}, "unexpected arguments"},
		{"an unknown flag", []string{"-nope"}, "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out)
			if !errors.Is(err, errUsage) || !strings.Contains(out.String(), tc.want) {
				t.Errorf("run(%q) = %v, output %q; want errUsage and %q", tc.args, err, out.String(), tc.want)
			}
		})
	}
}
