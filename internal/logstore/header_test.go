package logstore

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// A header's keys and values come back as they went, padded or not, and
// no record header of conveyor's own reads as one of the caller's.
func TestUserKeyRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, k, v string }{
		{"plain", "trace", "abc"},
		{"empty value", "e", ""},
		{"space at the start", "s", " x"},
		{"space at the end", "s", "x "},
		{"only spaces", "s", "   "},
		{"a key like a wire key", HeaderUserPadded + "x", "|y|"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wk, wv := UserKey(c.k, c.v)
			k, v, ok := FromWire(wk, wv)
			if !ok || k != c.k || v != c.v {
				t.Fatalf("FromWire(UserKey(%q, %q)) = %q, %q, %v", c.k, c.v, k, v, ok)
			}
		})
	}
	for _, k := range []string{HeaderID, HeaderAttempts, HeaderError, HeaderDue, HeaderEnqueued, "Nats-Msg-Id", "event-id"} {
		if _, _, ok := FromWire(k, "v"); ok {
			t.Errorf("FromWire(%q) reads a caller's header", k)
		}
	}
}

// A reason is cut at a character's end within the limit, and reads back
// as a start of itself.
func TestEscapeReason(t *testing.T) {
	reason := strings.Repeat("ü", 1000) + " and more"
	e := EscapeReason(reason, MaxReasonLen)
	if len(e) > MaxReasonLen {
		t.Fatalf("escaped reason of %d bytes, limit %d", len(e), MaxReasonLen)
	}
	got := UnescapeReason(e)
	if got == "" || !strings.HasPrefix(reason, got) || !utf8.ValidString(got) {
		t.Fatalf("UnescapeReason(EscapeReason(r)) = %q, want a start of r cut at a character", got)
	}
	if got := UnescapeReason(EscapeReason("line\nbreak: 100%", 100)); got != "line\nbreak: 100%" {
		t.Fatalf("a short reason came back as %q", got)
	}
}

// A delayed record is due at its due time; one without is due at once,
// and its enqueue time places it before or after a subscription.
func TestDelayFields(t *testing.T) {
	now := time.Unix(1000, 0)
	h := map[string]string{}
	DelayFields(func(k, v string) { h[k] = v }, now.Add(time.Minute), now)
	get := func(k string) string { return h[k] }
	if got := DueIn(get, now); got != time.Minute {
		t.Fatalf("DueIn = %v, want 1m", got)
	}
	if got := DueIn(func(string) string { return "" }, now); got != 0 {
		t.Fatalf("DueIn without a due time = %v, want 0", got)
	}
	if !EnqueuedBefore(get, now.Add(time.Second)) || EnqueuedBefore(get, now) {
		t.Fatal("EnqueuedBefore does not tell a subscription made after the enqueue from one made at it")
	}
}
