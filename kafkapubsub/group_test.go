package kafkapubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/conveyorgo/conveyor/kafkapubsub"
	"github.com/conveyorgo/conveyor/kafkapubsub/kafkapubsubtest"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// patience bounds each wait for what must happen.
const patience = 20 * time.Second

// groupOptions are the options of a consumer-group PubSub on a prefix of
// its own.
func groupOptions(t *testing.T, partitions int32) kafkapubsub.Options {
	brokers := kafkapubsubtest.Brokers(t)
	return kafkapubsub.Options{Brokers: brokers, Prefix: kafkapubsubtest.Prefix(t, brokers), ConsumerGroups: true,
		Partitions: partitions, Lease: time.Minute}
}

// openGroup returns a PubSub of opts, closed when t ends.
func openGroup(t *testing.T, opts kafkapubsub.Options) *kafkapubsub.PubSub {
	t.Helper()
	ps, err := kafkapubsub.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// topicOf opens topic name of ps.
func topicOf(t *testing.T, ps pubsub.PubSub, name string) pubsub.Topic {
	t.Helper()
	tp, err := pubsub.OpenTopic(ps, name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// take dequeues one message of tp, failing t after patience.
func take(t *testing.T, tp pubsub.Topic) pubsub.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	m, err := tp.Dequeue(ctx)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	return m
}

// attempt is m's delivery number.
func attempt(t *testing.T, m pubsub.Message) int {
	t.Helper()
	a, ok := pubsub.As[pubsub.Attempter](m)
	if !ok {
		t.Fatal("message has no attempt count")
	}
	return a.Attempt()
}

// Records acked out of order are committed only up to the first one not
// settled: a PubSub closed with one in hand leaves it, and the records
// settled above it, to the next member, which delivers them again with the
// attempt they had (at least once); what was committed is not.
func TestGroupsCommitContiguousOnly(t *testing.T) {
	opts := groupOptions(t, 1)
	ctx := context.Background()
	one := openGroup(t, opts)
	tp := topicOf(t, one, "contiguous")
	for _, d := range []string{"a", "b", "c", "d"} {
		if err := tp.Enqueue(ctx, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	var got []pubsub.Message
	for range 4 {
		got = append(got, take(t, tp))
	}
	for i, d := range []string{"a", "b", "c", "d"} {
		if string(got[i].Data()) != d {
			t.Fatalf("delivery %d is %q, want %q (one partition: in order)", i, got[i].Data(), d)
		}
	}
	// a settled, b in hand, c and d settled: only a is committed.
	for _, i := range []int{3, 0, 2} {
		if err := got[i].Ack(ctx); err != nil {
			t.Fatalf("Ack %s: %v", got[i].Data(), err)
		}
	}
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}

	two := openGroup(t, opts)
	tp2 := topicOf(t, two, "contiguous")
	for _, d := range []string{"b", "c", "d"} {
		m := take(t, tp2)
		if string(m.Data()) != d {
			t.Fatalf("after the restart got %q, want %q", m.Data(), d)
		}
		if a := attempt(t, m); a != 1 {
			t.Fatalf("%s delivered again with attempt %d, want 1 (the one it had)", d, a)
		}
		if err := m.Ack(ctx); err != nil {
			t.Fatalf("Ack %s: %v", d, err)
		}
	}
	if err := two.Close(); err != nil {
		t.Fatal(err)
	}

	three := openGroup(t, opts)
	tp3 := topicOf(t, three, "contiguous")
	if err := tp3.Enqueue(ctx, []byte("e")); err != nil {
		t.Fatal(err)
	}
	if m := take(t, tp3); string(m.Data()) != "e" {
		t.Fatalf("after all was settled and committed got %q, want e", m.Data())
	}
}

// Two processes on one subscription split its partitions: together they
// deliver each message once (none is acked twice), whichever partitions
// each holds.
func TestGroupsSplitPartitions(t *testing.T) {
	opts := groupOptions(t, 3)
	ctx := context.Background()
	one, two := openGroup(t, opts), openGroup(t, opts)
	a, b := topicOf(t, one, "split"), topicOf(t, two, "split")
	const n = 150
	for i := range n {
		if err := a.Enqueue(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	acked := map[string]int{}
	perProcess := map[pubsub.Topic]int{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, tp := range []pubsub.Topic{a, b, a, b} {
		wg.Go(func() {
			for {
				dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				m, err := tp.Dequeue(dctx)
				cancel()
				select {
				case <-done:
					return
				default:
				}
				if err != nil {
					continue
				}
				if err := m.Ack(ctx); err != nil {
					// Its partition moved to the other process while it
					// was in hand: the other delivers it again.
					if !errors.Is(err, pubsub.ErrLeaseExpired) {
						t.Errorf("Ack: %v", err)
					}
					continue
				}
				mu.Lock()
				acked[string(m.Data())]++
				perProcess[tp]++
				all := len(acked) == n
				mu.Unlock()
				if all {
					select {
					case <-done:
					default:
						close(done)
					}
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(patience):
		close(done)
	}
	wg.Wait()
	t.Logf("acked by the first process %d, by the second %d", perProcess[a], perProcess[b])
	for i := range n {
		if c := acked[fmt.Sprint(i)]; c != 1 {
			t.Errorf("message %d acked %d times across the two processes, want 1", i, c)
		}
	}
}

// A process joining a subscription takes none of the partitions of the
// process already there when an even split lets it keep them (one
// partition, two members), and the rebalance does not revoke them
// (cooperative): the delivery the first process has in hand stays
// settleable, and the second gets nothing until the first leaves.
func TestGroupsJoinKeepsDeliveriesInHand(t *testing.T) {
	opts := groupOptions(t, 1)
	ctx := context.Background()
	one := openGroup(t, opts)
	a := topicOf(t, one, "join")
	if err := a.Enqueue(ctx, []byte("in hand")); err != nil {
		t.Fatal(err)
	}
	held := take(t, a)

	two := openGroup(t, opts)
	b := topicOf(t, two, "join")
	bctx, stopB := context.WithTimeout(ctx, patience)
	defer stopB()
	gotB := make(chan pubsub.Message, 1)
	errB := make(chan error, 1)
	go func() {
		m, err := b.Dequeue(bctx)
		if err != nil {
			errB <- err
			return
		}
		gotB <- m
	}()
	adm := kadm.NewClient(newClient(t, opts.Brokers))
	group := groupOf(t, ctx, adm, opts.Prefix, "c")
	for { // until both processes are members of a stable group
		described, err := adm.DescribeGroups(bctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if g := described[group]; g.State == "Stable" && len(g.Members) == 2 {
			break
		}
		select {
		case m := <-gotB:
			t.Fatalf("the joining process got %q while the first had it in hand", m.Data())
		case err := <-errB:
			t.Fatalf("the joining process's Dequeue: %v", err)
		case <-bctx.Done():
			t.Fatalf("the group never had both processes: %s", describeGroup(opts.Brokers, opts.Prefix, true))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := held.Ack(ctx); err != nil {
		t.Fatalf("Ack of the delivery in hand after a process joined: %v (%s)", err, describeGroup(opts.Brokers, opts.Prefix, true))
	}
	if err := a.Enqueue(ctx, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := take(t, a); string(m.Data()) != "after" {
		t.Fatalf("the first process got %q, want the next message", m.Data())
	} else if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// The first leaves: its partition goes to the second.
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Enqueue(ctx, []byte("handed over")); err == nil {
		t.Fatal("Enqueue on a closed PubSub returned nil")
	}
	producer := openGroup(t, opts)
	if err := topicOf(t, producer, "join").Enqueue(ctx, []byte("handed over")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-gotB:
		if string(m.Data()) != "handed over" {
			t.Fatalf("the second process got %q, want the message after the first left", m.Data())
		}
	case err := <-errB:
		t.Fatalf("the second process's Dequeue after the first left: %v", err)
	}
}

// A subscription deleted by another process: a Dequeue waiting on it
// returns ErrNoSubscription.
func TestGroupsDeletedElsewhere(t *testing.T) {
	opts := groupOptions(t, 1)
	ctx := context.Background()
	one, two := openGroup(t, opts), openGroup(t, opts)
	gone, err := pubsub.Subscribe(ctx, one, "deleted", "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := take(t, gone).Ack(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	blocked := make(chan error, 1)
	go func() {
		_, err := gone.Dequeue(wctx)
		blocked <- err
	}()
	if err := admin.DeleteSubscription(ctx, two, "deleted", "gone"); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}
	if err := <-blocked; !errors.Is(err, pubsub.ErrNoSubscription) {
		t.Fatalf("Dequeue waiting when its subscription was deleted elsewhere: %v, want ErrNoSubscription", err)
	}
}

// A nacked message's attempts travel with its copy in the subscription's
// own log (logstore.HeaderDelivered): another process that delivers it
// after a restart counts on from them.
func TestGroupsAttemptsSurviveRestart(t *testing.T) {
	opts := groupOptions(t, 1)
	opts.Retry = pubsub.RetryPolicy{MaxAttempts: 5, MinBackoff: 200 * time.Millisecond, Jitter: -1}
	ctx := context.Background()
	one := openGroup(t, opts)
	tp := topicOf(t, one, "attempts")
	if err := tp.Enqueue(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	m := take(t, tp)
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	m = take(t, tp)
	if a := attempt(t, m); a != 2 {
		t.Fatalf("attempt after a nack: %d, want 2", a)
	}
	if err := m.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := one.Close(); err != nil { // the third copy not delivered yet
		t.Fatal(err)
	}
	two := openGroup(t, opts)
	m = take(t, topicOf(t, two, "attempts"))
	if string(m.Data()) != "x" || attempt(t, m) != 3 {
		t.Fatalf("after the restart got %q at attempt %d, want x at 3", m.Data(), attempt(t, m))
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// A subscription made in one mode is refused to a PubSub of the other,
// with an error wrapping ErrInvalidConfig naming Options.ConsumerGroups,
// for a Dequeue and for a Subscribe; so is the default subscription's
// reserve that a publish in the other mode made.
func TestGroupsModeMismatch(t *testing.T) {
	groups := groupOptions(t, 1)
	shares := groups
	shares.ConsumerGroups = false
	ctx := context.Background()
	g, s := openGroup(t, groups), openGroup(t, shares)
	if _, err := pubsub.Subscribe(ctx, g, "mixed", "made-by-groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := pubsub.Subscribe(ctx, s, "mixed-too", "made-by-shares"); err != nil {
		t.Fatal(err)
	}
	if err := topicOf(t, s, "reserve").Enqueue(ctx, []byte("kept for the default")); err != nil {
		t.Fatal(err)
	}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, kafkapubsub.ErrInvalidConfig) || !strings.Contains(err.Error(), "Options.ConsumerGroups") {
			t.Fatalf("%s: %v, want an error wrapping ErrInvalidConfig naming Options.ConsumerGroups", what, err)
		}
	}
	_, err := pubsub.Subscribe(ctx, s, "mixed", "made-by-groups")
	want("Subscribe in share-group mode to a consumer group's subscription", err)
	_, err = pubsub.Subscribe(ctx, g, "mixed-too", "made-by-shares")
	want("Subscribe in consumer-group mode to a share group's subscription", err)
	dctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	_, err = topicOf(t, g, "reserve").Dequeue(dctx)
	want("Dequeue in consumer-group mode of a default subscription reserved in share-group mode", err)
}
