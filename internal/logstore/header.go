package logstore

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Headers conveyor keeps on a log record of its own. A message's
// pubsub.Header travels under other keys (UserKey), never these.
const (
	// HeaderID is the message's ID, kept across retries and re-queues.
	HeaderID = "Conveyor-Id"
	// HeaderAttempts is a dead message's deliveries, in decimal.
	HeaderAttempts = "Conveyor-Attempts"
	// HeaderError is a dead message's last error, escaped (EscapeReason).
	HeaderError = "Conveyor-Error"
	// HeaderDelivered is the deliveries a message had before this record
	// of it, in decimal: a store whose delivery count starts again on a
	// record appended anew (a retry past a share group's delivery limit)
	// adds it to the count.
	HeaderDelivered = "Conveyor-Delivered"
	// HeaderDue is when a delayed message is due, in nanoseconds since
	// the Unix epoch.
	HeaderDue = "Conveyor-Due"
	// HeaderEnqueued is when a delayed message was enqueued, in
	// nanoseconds since the Unix epoch: a subscription made after that
	// skips it.
	HeaderEnqueued = "Conveyor-Enqueued"
)

// Prefixes of the record headers that carry a message's pubsub.Header:
// key k is HeaderUser+k, with its value as it is, or, for a value with a
// space at either end (which some stores trim), HeaderUserPadded+k with
// the value between two '|'. No header of conveyor's own starts with
// either.
const (
	HeaderUser       = "Conveyor-H-"
	HeaderUserPadded = "Conveyor-HP-"
	headerUserPrefix = "Conveyor-H" // what both start with
)

// UserKey returns the record header that carries key k of a message's
// pubsub.Header with value v.
func UserKey(k, v string) (key, value string) {
	if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
		return HeaderUserPadded + k, "|" + v + "|"
	}
	return HeaderUser + k, v
}

// FromWire returns the key and value of the message's pubsub.Header that
// record header key carries with value, ok false when it carries none.
func FromWire(key, value string) (k, v string, ok bool) {
	if !strings.HasPrefix(key, headerUserPrefix) {
		return "", "", false
	}
	if rest, ok := strings.CutPrefix(key, HeaderUser); ok {
		return rest, value, true
	}
	if rest, ok := strings.CutPrefix(key, HeaderUserPadded); ok && len(value) >= 2 {
		return rest, value[1 : len(value)-1], true
	}
	return "", "", false
}

// UserSize is an upper bound of the bytes h takes among a record's
// headers: for each key the prefix, the '|' around a padded value, and
// four bytes of framing (a NATS header's ": " and line end).
func UserSize(h pubsub.Header) int {
	n := 0
	for k, v := range h {
		n += len(HeaderUserPadded) + len(k) + len(v) + len("||: \r\n")
	}
	return n
}

// MaxReasonLen bounds the escaped reason kept with a dead record.
const MaxReasonLen = 2 << 10

// EscapeReason returns reason escaped for a header value (which holds no
// line breaks), cut at a character's end so that the escaped form takes
// at most limit bytes: the budget is of what goes on the wire, where a
// non-ASCII character takes three times its bytes.
func EscapeReason(reason string, limit int) string {
	var b strings.Builder
	for i := 0; i < len(reason); {
		_, size := utf8.DecodeRuneInString(reason[i:]) // 1 for a byte that is not UTF-8
		e := url.QueryEscape(reason[i : i+size])
		if b.Len()+len(e) > limit {
			break
		}
		b.WriteString(e)
		i += size
	}
	return b.String()
}

// UnescapeReason reverses EscapeReason; a value it cannot read is "".
func UnescapeReason(s string) string {
	r, _ := url.QueryUnescape(s)
	return r
}
