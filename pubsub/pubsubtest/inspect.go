package pubsubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// inspectCases check the inspection abilities (pubsub/inspect.go): topics
// listed, messages peeked in each state and by ID, cancelled, and dead
// ones deleted one by one.
var inspectCases = []testCase{
	{"InspectListTopics", testListTopics},
	{"InspectPeekEachState", testPeekStates},
	{"InspectPeekPages", testPeekPages},
	{"InspectMessageByID", testMessageByID},
	{"InspectCancel", testCancel},
	{"InspectDeleteDead", testDeleteDead},
}

func peek(t *testing.T, tp pubsub.Topic, opts admin.PeekOptions) admin.PeekPage {
	t.Helper()
	p, err := admin.Peek(context.Background(), tp, opts)
	if err != nil {
		t.Fatalf("Peek(%+v): %v", opts, err)
	}
	return p
}

// peekOne peeks state and wants exactly one message.
func peekOne(t *testing.T, tp pubsub.Topic, state admin.MessageState) admin.MessageInfo {
	t.Helper()
	p := peek(t, tp, admin.PeekOptions{State: state})
	if len(p.Messages) != 1 || p.Next != "" {
		t.Fatalf("Peek(%s): %d messages, next %q; want 1 and no next page: %+v", state, len(p.Messages), p.Next, p.Messages)
	}
	if got := p.Messages[0].State; got != state {
		t.Fatalf("Peek(%s): message %s in state %q", state, p.Messages[0].ID, got)
	}
	return p.Messages[0]
}

func testListTopics(t *testing.T, h Harness) {
	need(t, h.Abilities.TopicList, "listing topics (admin.TopicLister)")
	ctx := context.Background()
	ps := newPubSub(t, h, Config{})
	enqueue(t, open(t, ps, "topic-b"), "x")
	enqueue(t, open(t, ps, "topic-a"), "y")
	want := []admin.TopicInfo{{Name: "topic-a", Subscriptions: []string{}}, {Name: "topic-b", Subscriptions: []string{}}}
	if h.Abilities.Subscriptions {
		for _, sub := range []string{"sub-y", "sub-x"} {
			tp, err := pubsub.Subscribe(ctx, ps, "topic-c", sub)
			if err != nil {
				t.Fatalf("Subscribe(topic-c, %s): %v", sub, err)
			}
			t.Cleanup(func() { _ = tp.Close() })
		}
		want = append(want, admin.TopicInfo{Name: "topic-c", Subscriptions: []string{"sub-x", "sub-y"}})
	}
	got, err := admin.ListTopics(ctx, ps)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if !slices.EqualFunc(got, want, func(a, b admin.TopicInfo) bool {
		return a.Name == b.Name && slices.Equal(a.Subscriptions, b.Subscriptions)
	}) {
		t.Fatalf("ListTopics = %+v, want %+v", got, want)
	}
}

// peekedTopic makes a topic with one message in each state: "dead"
// (rejected), "busy" (dequeued, in hand), "now"
// (ready, with a header) and "later" (scheduled in an hour).
func peekedTopic(t *testing.T, h Harness, name string) (tp pubsub.Topic, dead, busy pubsub.Message) {
	t.Helper()
	ctx := context.Background()
	tp = open(t, newPubSub(t, h, Config{}), name)
	enqueue(t, tp, "dead")
	dead = dequeue(t, tp)
	if err := pubsub.Reject(ctx, dead, errors.New("cannot decode")); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	enqueue(t, tp, "busy")
	busy = dequeue(t, tp)
	t.Cleanup(func() { _ = busy.Ack(context.Background()) })
	hctx := pubsub.WithHeader(ctx, pubsub.Header{"tenant": "t1"})
	if err := tp.Enqueue(hctx, []byte("now")); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if err := pubsub.EnqueueDelayed(ctx, tp, []byte("later"), time.Hour); err != nil {
		t.Fatalf("EnqueueDelayed: %v", err)
	}
	return tp, dead, busy
}

func testPeekStates(t *testing.T, h Harness) {
	need(t, h.Abilities.Peek && h.Abilities.Delay && h.Abilities.Reject, "peek, delay and reject (admin.Peeker, pubsub.Delayer, pubsub.Rejecter)")
	start := time.Now()
	tp, dead, busy := peekedTopic(t, h, "peek-states")
	wantInfo := func(m admin.MessageInfo, data string) {
		t.Helper()
		if m.Size != len(data) || string(m.Preview) != data {
			t.Fatalf("message %s: size %d, preview %q; want %d, %q", m.ID, m.Size, m.Preview, len(data), data)
		}
		if !m.CreatedAt.IsZero() && (m.CreatedAt.Before(start.Add(-time.Minute)) || m.CreatedAt.After(time.Now().Add(time.Minute))) {
			t.Fatalf("message %s: created at %v, want about %v", m.ID, m.CreatedAt, start)
		}
	}

	ready := peekOne(t, tp, admin.StateReady)
	wantInfo(ready, "now")
	if ready.Header["tenant"] != "t1" || ready.Attempts != 0 {
		t.Fatalf("ready message: header %v, attempts %d; want tenant t1, 0 attempts", ready.Header, ready.Attempts)
	}

	later := peekOne(t, tp, admin.StateScheduled)
	wantInfo(later, "later")
	if d := time.Until(later.RunAt); d < 50*time.Minute || d > 70*time.Minute {
		t.Fatalf("scheduled message: run at %v, want in an hour", later.RunAt)
	}
	if later.Header != nil {
		t.Fatalf("scheduled message: header %v, want none", later.Header)
	}

	proc := peekOne(t, tp, admin.StateProcessing)
	wantInfo(proc, "busy")
	if proc.ID != busy.ID() || !proc.RunAt.After(start) {
		t.Fatalf("processing message: %s until %v, want %s leased until after %v", proc.ID, proc.RunAt, busy.ID(), start)
	}
	if h.Abilities.Attempts && proc.Attempts != 1 {
		t.Fatalf("processing message: %d attempts, want 1", proc.Attempts)
	}

	d := peekOne(t, tp, admin.StateDead)
	wantInfo(d, "dead")
	if d.ID != dead.ID() || !strings.Contains(d.LastError, "cannot decode") || d.RunAt.Before(start.Add(-time.Minute)) {
		t.Fatalf("dead message: %+v, want %s, its reason, died after %v", d, dead.ID(), start)
	}
	if _, err := admin.Peek(context.Background(), tp, admin.PeekOptions{State: "lost"}); err == nil {
		t.Fatal("Peek of state \"lost\": no error")
	}
}

func testPeekPages(t *testing.T, h Harness) {
	need(t, h.Abilities.Peek, "peek (admin.Peeker)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "peek-pages")
	const n = 120
	big := bytes.Repeat([]byte("0123456789"), 300)
	want := map[string]bool{}
	for i := range n {
		enqueue(t, tp, fmt.Sprintf("m%03d", i))
		want[fmt.Sprintf("m%03d", i)] = true
	}
	if err := tp.Enqueue(ctx, big); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if p := peek(t, tp, admin.PeekOptions{State: admin.StateReady}); len(p.Messages) != admin.DefaultPeekLimit || p.Next == "" {
		t.Fatalf("Peek without a limit: %d messages, next %q; want %d and a next page", len(p.Messages), p.Next, admin.DefaultPeekLimit)
	}
	seen := map[string]bool{}
	var pages int
	for after := ""; ; pages++ {
		p := peek(t, tp, admin.PeekOptions{State: admin.StateReady, Limit: 25, After: after})
		if len(p.Messages) > 25 || (p.Next != "" && len(p.Messages) == 0) {
			t.Fatalf("page %d: %d messages, next %q", pages, len(p.Messages), p.Next)
		}
		for _, m := range p.Messages {
			if seen[m.ID] {
				t.Fatalf("page %d: message %s listed twice", pages, m.ID)
			}
			seen[m.ID] = true
			if m.Size == len(big) {
				if !bytes.Equal(m.Preview, big[:admin.PreviewSize]) {
					t.Fatalf("preview of a %d-byte message: %d bytes, want its first %d", len(big), len(m.Preview), admin.PreviewSize)
				}
				continue
			}
			if !want[string(m.Preview)] {
				t.Fatalf("page %d: message %s %q, not one enqueued, or listed twice", pages, m.ID, m.Preview)
			}
			delete(want, string(m.Preview))
		}
		if after = p.Next; after == "" {
			break
		}
		if pages > n {
			t.Fatal("Peek keeps giving pages")
		}
	}
	if len(want) != 0 || len(seen) != n+1 {
		t.Fatalf("paging listed %d messages, want %d; missing: %d", len(seen), n+1, len(want))
	}
	_, err := admin.Peek(ctx, tp, admin.PeekOptions{State: admin.StateReady, After: "not a cursor"})
	wantErr(t, "Peek after a bad cursor", err, admin.ErrInvalidCursor)
}

func testMessageByID(t *testing.T, h Harness) {
	need(t, h.Abilities.Peek && h.Abilities.Delay && h.Abilities.Reject, "peek, delay and reject (admin.Peeker, pubsub.Delayer, pubsub.Rejecter)")
	ctx := context.Background()
	tp, dead, busy := peekedTopic(t, h, "message-by-id")
	ids := map[admin.MessageState]string{
		admin.StateDead:       dead.ID(),
		admin.StateProcessing: busy.ID(),
		admin.StateReady:      peekOne(t, tp, admin.StateReady).ID,
		admin.StateScheduled:  peekOne(t, tp, admin.StateScheduled).ID,
	}
	data := map[admin.MessageState]string{admin.StateDead: "dead", admin.StateProcessing: "busy",
		admin.StateReady: "now", admin.StateScheduled: "later"}
	for state, id := range ids {
		info, got, err := admin.GetMessage(ctx, tp, id)
		if err != nil {
			t.Fatalf("GetMessage(%s, the %s one): %v", id, state, err)
		}
		if info.ID != id || info.State != state || string(got) != data[state] || string(info.Preview) != data[state] {
			t.Fatalf("GetMessage(%s) = %+v, %q; want the %s message %q", id, info, got, state, data[state])
		}
	}
	_, _, err := admin.GetMessage(ctx, tp, "no such id")
	wantErr(t, "GetMessage of a malformed ID", err, admin.ErrInvalidID)
	ack(t, busy)
	_, _, err = admin.GetMessage(ctx, tp, busy.ID())
	wantErr(t, "GetMessage of an acked message", err, admin.ErrNotFound)
	_, _, err = admin.GetMessage(ctx, tp, "987654321")
	wantErr(t, "GetMessage of an unknown ID", err, admin.ErrNotFound)
}

func testCancel(t *testing.T, h Harness) {
	need(t, h.Abilities.Cancel && h.Abilities.Peek && h.Abilities.Delay && h.Abilities.Reject,
		"cancel, peek, delay and reject (admin.Canceler, admin.Peeker, pubsub.Delayer, pubsub.Rejecter)")
	ctx := context.Background()
	tp, dead, busy := peekedTopic(t, h, "cancel")
	ready, later := peekOne(t, tp, admin.StateReady), peekOne(t, tp, admin.StateScheduled)
	if err := pubsub.EnqueueDelayed(ctx, tp, []byte("soon"), 300*time.Millisecond); err != nil {
		t.Fatalf("EnqueueDelayed: %v", err)
	}
	var soon string
	for _, m := range peek(t, tp, admin.PeekOptions{State: admin.StateScheduled}).Messages {
		if string(m.Preview) == "soon" {
			soon = m.ID
		}
	}
	if soon == "" {
		t.Fatal("Peek(scheduled) does not list a message delayed by 300 ms")
	}
	for _, id := range []string{ready.ID, later.ID, soon} {
		if err := admin.Cancel(ctx, tp, id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
		_, _, err := admin.GetMessage(ctx, tp, id)
		wantErr(t, "GetMessage of a cancelled message", err, admin.ErrNotFound)
	}
	wantErr(t, "Cancel of a cancelled message", admin.Cancel(ctx, tp, ready.ID), admin.ErrNotFound)
	wantErr(t, "Cancel of a processing message", admin.Cancel(ctx, tp, busy.ID()), admin.ErrWrongState)
	wantErr(t, "Cancel of a dead message", admin.Cancel(ctx, tp, dead.ID()), admin.ErrWrongState)
	wantErr(t, "Cancel of an unknown ID", admin.Cancel(ctx, tp, "987654321"), admin.ErrNotFound)
	wantErr(t, "Cancel of a malformed ID", admin.Cancel(ctx, tp, "no such id"), admin.ErrInvalidID)
	// Neither the ready nor the scheduled one comes, even once due.
	expectNone(t, tp, 600*time.Millisecond)
	// The processing one was untouched.
	ack(t, busy)
	if s := peek(t, tp, admin.PeekOptions{State: admin.StateDead}); len(s.Messages) != 1 {
		t.Fatalf("dead messages after the cancels: %d, want 1", len(s.Messages))
	}
}

func testDeleteDead(t *testing.T, h Harness) {
	need(t, h.Abilities.DeleteDead && h.Abilities.Reject && h.Abilities.DeadLetters,
		"deleting one dead message, reject and dead letters (admin.DeadDeleter, pubsub.Rejecter, admin.DeadLetters)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "delete-dead")
	enqueue(t, tp, "x", "y")
	var ids []string
	for range 2 {
		m := dequeue(t, tp)
		ids = append(ids, m.ID())
		if err := pubsub.Reject(ctx, m, errors.New("no")); err != nil {
			t.Fatalf("Reject: %v", err)
		}
	}
	enqueue(t, tp, "alive")
	if err := admin.DeleteDead(ctx, tp, ids[0]); err != nil {
		t.Fatalf("DeleteDead(%s): %v", ids[0], err)
	}
	if dead := deadLetters(t, tp); len(dead) != 1 || dead[0].ID != ids[1] {
		t.Fatalf("ListDead after deleting %s: %+v, want %s alone", ids[0], dead, ids[1])
	}
	wantErr(t, "DeleteDead of a deleted message", admin.DeleteDead(ctx, tp, ids[0]), admin.ErrNotFound)
	wantErr(t, "DeleteDead of a malformed ID", admin.DeleteDead(ctx, tp, "no such id"), admin.ErrInvalidID)
	m := dequeue(t, tp)
	wantData(t, m, "alive")
	wantErr(t, "DeleteDead of a processing message", admin.DeleteDead(ctx, tp, m.ID()), admin.ErrNotFound)
	ack(t, m)
}
