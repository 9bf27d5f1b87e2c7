package natspubsub

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/pubsub"
)

// A message's pubsub.Header travels in its NATS headers, each key of it
// under a prefix of its own, so that no key of the caller's is ever taken
// for one that conveyor (Conveyor-Id, Conveyor-Due ...) or the server
// (Nats-Msg-Id, Nats-Expected-Stream ...) reads, whatever its name: key k
// is the NATS header hdrUser+k, with the value as it is. NATS trims the
// spaces at the ends of a header value, so a value with a space at either
// end is sent between two '|' under hdrUserPadded+k instead. No header of
// conveyor's own starts with either prefix.
const (
	hdrUser       = "Conveyor-H-"
	hdrUserPadded = "Conveyor-HP-"
	hdrUserPrefix = "Conveyor-H" // what both start with
)

// wireSize is the bytes h takes among a message's NATS headers, as
// putHeader writes it: its keys and values, and for each key a prefix,
// the '|' around a padded value, ": " and the line's end.
func wireSize(h pubsub.Header) int {
	n := 0
	for k, v := range h {
		n += len(hdrUserPadded) + len(k) + len(v) + len("||: \r\n")
	}
	return n
}

// putHeader adds h, a valid header, to wire, the NATS headers of a message.
func putHeader(wire nats.Header, h pubsub.Header) {
	for k, v := range h {
		if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
			wire[hdrUserPadded+k] = []string{"|" + v + "|"}
			continue
		}
		wire[hdrUser+k] = []string{v}
	}
}

// headerOf returns the pubsub.Header that putHeader put in wire, nil if
// none. It allocates nothing for a message without one.
func headerOf(wire nats.Header) pubsub.Header {
	var h pubsub.Header
	for wk, vs := range wire {
		if len(vs) == 0 || !strings.HasPrefix(wk, hdrUserPrefix) {
			continue
		}
		k, v := "", vs[0]
		if rest, ok := strings.CutPrefix(wk, hdrUser); ok {
			k = rest
		} else if rest, ok := strings.CutPrefix(wk, hdrUserPadded); ok && len(v) >= 2 {
			k, v = rest, v[1:len(v)-1]
		} else {
			continue
		}
		if h == nil {
			h = make(pubsub.Header, len(wire))
		}
		h[k] = v
	}
	return h
}
