package pubsubtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

// The cases of message headers (pubsub.WithHeader, pubsub.MessageHeader):
// every backend carries them, on every enqueue and every delivery.
var headerCases = []testCase{
	{"HeaderOnEveryEnqueue", testHeaderEveryEnqueue},
	{"HeaderIsPerMessage", testHeaderPerMessage},
	{"HeaderSurvivesRedelivery", testHeaderRedelivery},
	{"HeaderSurvivesDeadAndRequeue", testHeaderDead},
	{"HeaderInEverySubscriptionsCopy", testHeaderFanOut},
	{"HeaderMerges", testHeaderMerge},
	{"HeaderInvalidIsRefused", testHeaderInvalid},
}

// sampleHeader is a header with what a backend might get wrong: keys that
// differ in case only, keys named like the headers a backend may use
// itself on the wire, an empty value, values with spaces at their ends,
// quotes, non-ASCII text and characters that mean something in JSON or in
// a header line.
func sampleHeader() pubsub.Header {
	return pubsub.Header{
		"traceparent":          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Tenant":               "acme",
		"tenant":               "lower-case key, another key",
		"Nats-Msg-Id":          "not the backend's",
		"Nats-Expected-Stream": "nothing to expect",
		"Conveyor-Id":          "not the message ID",
		"Status":               "503",
		"a.b_c-D":              "",
		"spaces":               "  both ends  ",
		"quoted":               `"{\"json\": [1, 2]}": key: value\ `,
		"unicode":              "ünïcödé ✓ 名前",
	}
}

// wantHeader checks that m carries want: nil or empty when want is.
func wantHeader(t *testing.T, m pubsub.Message, want pubsub.Header) {
	t.Helper()
	got := pubsub.MessageHeader(m)
	if !maps.Equal(got, want) {
		t.Fatalf("message %s %q: header %q, want %q", m.ID(), m.Data(), got, want)
	}
}

// enqueueCalls returns every enqueue tp offers, by name, each adding the
// message data with ctx; delayed ones are due after delay.
func enqueueCalls(h Harness, tp pubsub.Topic, delay time.Duration) map[string]func(ctx context.Context, data string) error {
	calls := map[string]func(context.Context, string) error{
		"Enqueue": func(ctx context.Context, d string) error { return tp.Enqueue(ctx, []byte(d)) },
	}
	// As, not FindSpeedup: through a wrapper without the speed-up, the
	// backend's own EnqueueOwned is checked too.
	if o, ok := pubsub.As[wrap.OwnedEnqueuer](tp); ok {
		calls["EnqueueOwned"] = func(ctx context.Context, d string) error { return o.EnqueueOwned(ctx, []byte(d)) }
	}
	if h.Abilities.Delay {
		calls["EnqueueAt"] = func(ctx context.Context, d string) error {
			return pubsub.EnqueueAt(ctx, tp, []byte(d), time.Now().Add(delay))
		}
	}
	if h.Abilities.Batch {
		calls["EnqueueBatch"] = func(ctx context.Context, d string) error {
			return pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte(d + " (1 of 2)"), []byte(d + " (2 of 2)")})
		}
	}
	if h.Abilities.Unique {
		calls["EnqueueUnique"] = func(ctx context.Context, d string) error {
			ok, err := pubsub.EnqueueUnique(ctx, tp, "key "+d, []byte(d))
			if err == nil && !ok {
				err = fmt.Errorf("EnqueueUnique with a new key added nothing")
			}
			return err
		}
	}
	return calls
}

// dequeueAll dequeues and acks n messages of tp and returns the header of
// each, by its data.
func dequeueAll(t *testing.T, tp pubsub.Topic, n int) map[string]pubsub.Header {
	t.Helper()
	got := make(map[string]pubsub.Header, n)
	for range n {
		m := dequeue(t, tp)
		if _, dup := got[string(m.Data())]; dup {
			t.Fatalf("message %q delivered twice", m.Data())
		}
		got[string(m.Data())] = pubsub.MessageHeader(m)
		ack(t, m)
	}
	return got
}

// wantHeaders checks that got, headers by data, holds each of want.
func wantHeaders(t *testing.T, where string, got, want map[string]pubsub.Header) {
	t.Helper()
	for d, w := range want {
		g, ok := got[d]
		switch {
		case !ok:
			t.Errorf("%s: message %q not delivered", where, d)
		case !maps.Equal(g, w):
			t.Errorf("%s: message %q has header %q, want %q", where, d, g, w)
		}
	}
}

// testHeaderEveryEnqueue: each enqueue the backend offers, with and
// without a header, delivers each message with the header it was
// enqueued with, and none without.
func testHeaderEveryEnqueue(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "header")
	hdr := sampleHeader()
	ctx := pubsub.WithHeader(context.Background(), hdr)
	want := map[string]pubsub.Header{}
	for name, call := range enqueueCalls(h, tp, 100*time.Millisecond) {
		for _, c := range []struct {
			suffix string
			ctx    context.Context
			want   pubsub.Header
		}{{"with a header", ctx, hdr}, {"without", context.Background(), nil}} {
			d := name + " " + c.suffix
			if err := call(c.ctx, d); err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			if name == "EnqueueBatch" {
				want[d+" (1 of 2)"], want[d+" (2 of 2)"] = c.want, c.want
			} else {
				want[d] = c.want
			}
		}
	}
	// The header is the enqueue's: changing the map given to WithHeader
	// afterwards changes nothing.
	hdr["Tenant"] = "changed after the enqueue"
	delete(hdr, "traceparent")
	got := dequeueAll(t, tp, len(want))
	want = maps.Clone(want)
	for d, w := range want {
		if w != nil {
			want[d] = sampleHeader()
		}
	}
	wantHeaders(t, "one topic", got, want)
	expectNone(t, tp, 200*time.Millisecond)
}

// testHeaderPerMessage: concurrent enqueues, with headers of their own or
// none, which a backend may write together, each keep their own.
func testHeaderPerMessage(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "header-per-message")
	const producers, each = 8, 20
	want := map[string]pubsub.Header{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				d := fmt.Sprintf("p%d-%02d", p, i)
				ctx := context.Background()
				var hdr pubsub.Header
				if i%3 != 0 {
					hdr = pubsub.Header{"message": d}
					if i%2 == 0 {
						hdr["even"] = "yes"
					}
					ctx = pubsub.WithHeader(ctx, hdr)
				}
				var err error
				if h.Abilities.Batch && i%4 == 1 {
					err = pubsub.EnqueueBatch(ctx, tp, [][]byte{[]byte(d)})
				} else {
					err = tp.Enqueue(ctx, []byte(d))
				}
				if err != nil {
					t.Errorf("Enqueue(%q): %v", d, err)
					return
				}
				mu.Lock()
				want[d] = hdr
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	wantHeaders(t, "concurrent enqueues", dequeueAll(t, tp, len(want)), want)
}

// testHeaderRedelivery: the header comes with every delivery: after a
// Nack, and after a lease ran out.
func testHeaderRedelivery(t *testing.T, h Harness) {
	const lease = 400 * time.Millisecond
	cfg := Config{Retry: pubsub.RetryPolicy{MaxAttempts: 5, MinBackoff: 50 * time.Millisecond, Jitter: -1}, Lease: lease}
	tp := open(t, newPubSub(t, h, cfg), "header-redelivery")
	hdr := pubsub.Header{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if err := tp.Enqueue(pubsub.WithHeader(context.Background(), hdr), []byte("again")); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	m := dequeue(t, tp)
	wantHeader(t, m, hdr)
	nack(t, m)
	m = dequeue(t, tp) // after the Nack
	wantAttempt(t, h, m, 2)
	wantHeader(t, m, hdr)
	m = dequeue(t, tp) // after the lease ran out
	wantAttempt(t, h, m, 3)
	wantHeader(t, m, hdr)
	ack(t, m)
}

// testHeaderDead: a dead message keeps its header, and a re-queued one is
// delivered with it.
func testHeaderDead(t *testing.T, h Harness) {
	need(t, h.Abilities.DeadLetters && h.Abilities.Reject, "dead letters and reject (admin.DeadLetters, pubsub.Rejecter)")
	ctx := context.Background()
	tp := open(t, newPubSub(t, h, Config{}), "header-dead")
	hdr := pubsub.Header{"tenant": "acme", "spaces": " kept "}
	if err := tp.Enqueue(pubsub.WithHeader(ctx, hdr), []byte("one")); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	enqueue(t, tp, "none")
	reject := func() {
		t.Helper()
		for range 2 {
			if err := pubsub.Reject(ctx, dequeue(t, tp), errors.New("later")); err != nil {
				t.Fatalf("Reject: %v", err)
			}
		}
	}
	reject()
	var id string
	for _, d := range deadLetters(t, tp) {
		want := pubsub.Header(nil)
		if string(d.Data) == "one" {
			id, want = d.ID, hdr
		}
		if !maps.Equal(d.Header, want) || (want == nil) != (d.Header == nil) {
			t.Fatalf("ListDead: %q has header %v, want %v", d.Data, d.Header, want)
		}
	}
	if err := admin.RequeueDead(ctx, tp, id); err != nil {
		t.Fatalf("RequeueDead: %v", err)
	}
	m := dequeue(t, tp)
	wantData(t, m, "one")
	wantHeader(t, m, hdr)
	if err := pubsub.Reject(ctx, m, errors.New("again")); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	if n, err := admin.RequeueAllDead(ctx, tp); err != nil || n != 2 {
		t.Fatalf("RequeueAllDead = %d, %v; want 2, nil", n, err)
	}
	wantHeaders(t, "after RequeueAllDead", dequeueAll(t, tp, 2), map[string]pubsub.Header{"one": hdr, "none": nil})
}

// testHeaderFanOut: each subscription's copy carries the header, through
// every enqueue.
func testHeaderFanOut(t *testing.T, h Harness) {
	needSubscriptions(t, h)
	ps := newPubSub(t, h, Config{})
	a, b := subscribe(t, ps, "header-fanout", "a"), subscribe(t, ps, "header-fanout", "b")
	hdr := sampleHeader()
	ctx := pubsub.WithHeader(context.Background(), hdr)
	want := map[string]pubsub.Header{}
	for name, call := range enqueueCalls(h, open(t, ps, "header-fanout"), 100*time.Millisecond) {
		if err := call(ctx, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "EnqueueBatch" {
			want[name+" (1 of 2)"], want[name+" (2 of 2)"] = hdr, hdr
		} else {
			want[name] = hdr
		}
	}
	enqueue(t, a, "none")
	want["none"] = nil
	for sub, tp := range map[string]pubsub.Topic{"a": a, "b": b} {
		wantHeaders(t, "subscription "+sub, dequeueAll(t, tp, len(want)), want)
	}
}

// testHeaderMerge: nested WithHeader calls merge, the inner one's values
// winning; an empty header adds nothing.
func testHeaderMerge(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "header-merge")
	outer := pubsub.WithHeader(context.Background(), pubsub.Header{"a": "outer", "b": "outer"})
	inner := pubsub.WithHeader(outer, pubsub.Header{"b": "inner", "c": "inner"})
	for _, c := range []struct {
		ctx  context.Context
		data string
	}{
		{inner, "inner"},
		{outer, "outer"},
		{pubsub.WithHeader(context.Background(), pubsub.Header{}), "empty"},
		{pubsub.WithHeader(outer, nil), "outer, nil added"},
	} {
		if err := tp.Enqueue(c.ctx, []byte(c.data)); err != nil {
			t.Fatalf("Enqueue(%q): %v", c.data, err)
		}
	}
	wantHeaders(t, "merged", dequeueAll(t, tp, 4), map[string]pubsub.Header{
		"inner":            {"a": "outer", "b": "inner", "c": "inner"},
		"outer":            {"a": "outer", "b": "outer"},
		"empty":            nil,
		"outer, nil added": {"a": "outer", "b": "outer"},
	})
}

// testHeaderInvalid: every enqueue with a header ValidateHeader rejects
// fails with ErrInvalidHeader and adds nothing, a unique key included.
func testHeaderInvalid(t *testing.T, h Harness) {
	tp := open(t, newPubSub(t, h, Config{}), "header-invalid")
	many := pubsub.Header{}
	for i := range pubsub.MaxHeaderKeys + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	bad := map[string]pubsub.Header{
		"a key with a space":      {"a b": "x"},
		"an empty key":            {"": "x"},
		"a key with a colon":      {"a:b": "x"},
		"a non-ASCII key":         {"clé": "x"},
		"a line break in a value": {"ok": "x\ny"},
		"a NUL in a value":        {"ok": "x\x00y"},
		"a value not UTF-8":       {"ok": "\xff"},
		"too many keys":           many,
		"too many bytes":          {"big": strings.Repeat("x", pubsub.MaxHeaderSize+1)},
	}
	for what, hdr := range bad {
		ctx := pubsub.WithHeader(context.Background(), hdr)
		for name, call := range enqueueCalls(h, tp, time.Millisecond) {
			err := call(ctx, "invalid")
			wantErr(t, fmt.Sprintf("%s with %s", name, what), err, pubsub.ErrInvalidHeader)
		}
	}
	expectNone(t, tp, 200*time.Millisecond)
	if h.Abilities.Stats {
		s, err := admin.TopicStats(context.Background(), tp)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if s != (admin.Stats{}) {
			t.Fatalf("Stats after the refused enqueues = %+v, want nothing kept", s)
		}
	}
	if h.Abilities.Unique { // the refused unique enqueues took no key
		ok, err := pubsub.EnqueueUnique(context.Background(), tp, "key invalid", []byte("valid"))
		if err != nil || !ok {
			t.Fatalf("EnqueueUnique of a key a refused enqueue had = %v, %v; want true, nil", ok, err)
		}
		m := dequeue(t, tp)
		wantHeader(t, m, nil)
		ack(t, m)
	}
}
