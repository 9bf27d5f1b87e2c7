package natspubsub

import (
	"github.com/nats-io/nats.go"

	"github.com/conveyorgo/conveyor/internal/logstore"
	"github.com/conveyorgo/conveyor/pubsub"
)

// A message's pubsub.Header travels in its NATS headers, each key of it
// under a prefix of its own (logstore.UserKey), so that no key of the
// caller's is ever taken for one that conveyor (Conveyor-Id, Conveyor-Due
// ...) or the server (Nats-Msg-Id, Nats-Expected-Stream ...) reads,
// whatever its name. NATS trims the spaces at the ends of a header value,
// which the padded form keeps.

// wireSize is the bytes h takes among a message's NATS headers, as
// putHeader writes it.
func wireSize(h pubsub.Header) int { return logstore.UserSize(h) }

// putHeader adds h, a valid header, to wire, the NATS headers of a message.
func putHeader(wire nats.Header, h pubsub.Header) {
	for k, v := range h {
		wk, wv := logstore.UserKey(k, v)
		wire[wk] = []string{wv}
	}
}

// headerOf returns the pubsub.Header that putHeader put in wire, nil if
// none. It allocates nothing for a message without one.
func headerOf(wire nats.Header) pubsub.Header {
	var h pubsub.Header
	for wk, vs := range wire {
		if len(vs) == 0 {
			continue
		}
		k, v, ok := logstore.FromWire(wk, vs[0])
		if !ok {
			continue
		}
		if h == nil {
			h = make(pubsub.Header, len(wire))
		}
		h[k] = v
	}
	return h
}
