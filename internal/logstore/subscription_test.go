package logstore

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// last is a position that, like a JetStream stream sequence, is the last
// record's: the records after it start at the next.
type last uint64

func (l last) IsSet() bool                   { return l > 0 }
func (l last) Next() last                    { return l + 1 }
func (l last) Holds(end last, r uint64) bool { return uint64(l) <= r && r <= uint64(end) }

// ends is a position that, like Kafka's end offsets, is where the next
// record of each partition goes.
type ends map[int32]int64

type at struct {
	partition int32
	offset    int64
}

func (e ends) IsSet() bool { return e != nil }
func (e ends) Next() ends  { return e }
func (e ends) Holds(end ends, r at) bool {
	from, ok := e[r.partition]
	return ok && r.offset >= from && r.offset < end[r.partition]
}

type seqSub = Subscription[last, uint64]

// A store's description with fields of its own, as kafkapubsub's.
type withGen struct {
	Subscription[ends, at]
	Gen string `json:"gen"`
}

// endAt is a log's end that counts its lookups.
func endAt[P any](p P, calls *int) func() (P, error) {
	return func() (P, error) { *calls++; return p, nil }
}

func TestDeclare(t *testing.T) {
	retry := &pubsub.RetryPolicy{MaxAttempts: 3, MinBackoff: time.Second, MaxBackoff: time.Minute}
	for _, c := range []struct {
		name  string
		d     seqSub
		want  seqSub
		calls int
	}{
		{"a reserve nobody passed", seqSub{Sub: "default", Reserve: true},
			seqSub{Sub: "default", Retry: retry}, 0},
		{"a reserve with an end skips past it", seqSub{Sub: "default", Reserve: true, Until: 7},
			seqSub{Sub: "default", SkipFrom: 8, SkipTo: 20, Retry: retry}, 1},
		{"a listed one keeps its own", seqSub{Sub: "a", SkipFrom: 2, SkipTo: 3},
			seqSub{Sub: "a", SkipFrom: 2, SkipTo: 3}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			got, err := c.d.Declare(retry, endAt[last](20, &calls))
			if err != nil || describe(t, got) != describe(t, c.want) || calls != c.calls {
				t.Fatalf("Declare = %s, %v with %d lookups of the end; want %s with %d",
					describe(t, got), err, calls, describe(t, c.want), c.calls)
			}
			if _, listed := got.entry(); !listed {
				t.Fatal("a declared subscription is not listed")
			}
		})
	}
	boom := errors.New("boom")
	d := seqSub{Sub: "default", Reserve: true, Until: 7}
	if got, err := d.Declare(nil, func() (last, error) { return 0, boom }); !errors.Is(err, boom) || got != d {
		t.Fatalf("Declare with the end failing = %+v, %v; want the reserve as it was and the error", got, err)
	}
}

// Only the first named subscription's end is the reserve's.
func TestNoteUntil(t *testing.T) {
	calls := 0
	d, noted, err := seqSub{Sub: "default", Reserve: true}.NoteUntil(endAt[last](5, &calls))
	if err != nil || !noted || d.Until != 5 {
		t.Fatalf("NoteUntil of a reserve = %+v, %v, %v", d, noted, err)
	}
	if d, noted, _ = d.NoteUntil(endAt[last](9, &calls)); noted || d.Until != 5 || calls != 1 {
		t.Fatalf("NoteUntil again = %+v, %v after %d lookups; want Until 5 kept, one lookup", d, noted, calls)
	}
	if d, noted, _ := (seqSub{Sub: "default"}).NoteUntil(endAt[last](9, &calls)); noted || d.Until.IsSet() {
		t.Fatalf("NoteUntil of a listed subscription = %+v, %v", d, noted)
	}
}

// The declared default skips what was published while it was a reserve
// after a named subscription was made, and only that, by either kind of
// position.
func TestSkips(t *testing.T) {
	reserve := seqSub{Sub: "default", Reserve: true}
	calls := 0
	reserve, _, _ = reserve.NoteUntil(endAt[last](4, &calls)) // records 1-4 were the reserve's
	d, _ := reserve.Declare(nil, endAt[last](9, &calls))      // 5-9 the named ones'
	for r, want := range map[uint64]bool{1: false, 4: false, 5: true, 9: true, 10: false} {
		if d.Skips(r) != want {
			t.Errorf("Skips(%d) = %v, want %v", r, !want, want)
		}
	}
	if (seqSub{Sub: "a"}).Skips(5) {
		t.Error("a subscription without a skip range skips")
	}

	k := withGen{Subscription: Subscription[ends, at]{Sub: "default", Reserve: true}}
	k.Subscription, _, _ = k.NoteUntil(endAt(ends{0: 4, 1: 2}, &calls))
	k.Subscription, _ = k.Declare(nil, endAt(ends{0: 9, 1: 2}, &calls))
	for r, want := range map[at]bool{{0, 3}: false, {0, 4}: true, {0, 8}: true, {0, 9}: false, {1, 2}: false, {2, 0}: false} {
		if k.Skips(r) != want {
			t.Errorf("Skips(%v) = %v, want %v", r, !want, want)
		}
	}
}

// The JSON is what the stores keep today, field for field.
func TestSubscriptionJSON(t *testing.T) {
	retry := &pubsub.RetryPolicy{MaxAttempts: 2}
	for _, c := range []struct {
		name string
		d    any
		want string
	}{
		{"a reserve", seqSub{Sub: "default", Reserve: true},
			`{"subscription":"default","reserve":true}`},
		{"every field", seqSub{Sub: "default", Until: 1, SkipFrom: 2, SkipTo: 3, Retry: retry},
			`{"subscription":"default","until":1,"skip_from":2,"skip_to":3,"retry":{"MaxAttempts":2,"MinBackoff":0,"MaxBackoff":0,"Jitter":0}}`},
		{"embedded, with offsets", withGen{Subscription[ends, at]{Sub: "s", SkipFrom: ends{0: 1}, SkipTo: ends{0: 4}}, "g1"},
			`{"subscription":"s","skip_from":{"0":1},"skip_to":{"0":4},"gen":"g1"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(t, c.d); got != c.want {
				t.Fatalf("JSON = %s, want %s", got, c.want)
			}
		})
	}
	d, ok := Parse[withGen]([]byte(`{"subscription":"s","gen":"g1","until":{"1":7}}`))
	if !ok || d.Gen != "g1" || d.Until[1] != 7 {
		t.Fatalf("Parse = %+v, %v", d, ok)
	}
	for _, b := range []string{`{"gen":"g1"}`, `{"name":"x"}`, `not json`, ``} {
		if d, ok := Parse[seqSub]([]byte(b)); ok {
			t.Errorf("Parse(%q) = %+v, a description conveyor did not make", b, d)
		}
	}
}

// Names lists the subscriptions that are not reserves, sorted.
func TestNames(t *testing.T) {
	reg := map[string]withGen{}
	for _, d := range []Subscription[ends, at]{{Sub: "b"}, {Sub: "default", Reserve: true}, {Sub: "a"}, {Sub: "p", Reserve: true}} {
		reg[d.Sub] = withGen{Subscription: d}
	}
	if got, want := Names(maps.Values(reg)), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Names = %q, want %q", got, want)
	}
	if got := Names(slices.Values([]seqSub{{Sub: "default", Reserve: true}})); got == nil || len(got) != 0 {
		t.Fatalf("Names of only a reserve = %#v, want an empty list", got)
	}
}

func describe(t *testing.T, d any) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A subscription keeps a retry policy only when it was given one of its
// own, and its configuration says so.
func TestOwnRetry(t *testing.T) {
	defaults := driver.SubscriptionConfig{Retry: pubsub.RetryPolicy{MaxAttempts: 5}, Lease: time.Minute}
	if got := (seqSub{Sub: "a", Retry: OwnRetry(defaults)}).Config(defaults); got != defaults {
		t.Fatalf("Config without a policy of its own = %+v, want the defaults %+v", got, defaults)
	}
	own := driver.SubscriptionConfig{Retry: pubsub.RetryPolicy{MaxAttempts: 2}, Own: true}
	want := driver.SubscriptionConfig{Retry: own.Retry, Lease: time.Minute, Own: true}
	if got := (seqSub{Sub: "a", Retry: OwnRetry(own)}).Config(defaults); got != want {
		t.Fatalf("Config with a policy of its own = %+v, want %+v", got, want)
	}
}
