package natspubsub

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/conveyorgo/conveyor/pubsub"
)

// conveyorHeaders is a message's NATS headers as conveyor sets them, every
// one of its own at once.
func conveyorHeaders() nats.Header {
	return nats.Header{
		hdrID: {"id"}, hdrAttempts: {"3"}, hdrError: {"boom"}, hdrDue: {"1"}, hdrEnqueued: {"2"},
		jetstream.MsgIDHeader: {"msg-id"},
	}
}

// A user's key never takes the place of one of conveyor's or the server's,
// whatever its name, and every valid header comes back as it was put.
func TestHeaderOnTheWire(t *testing.T) {
	own := conveyorHeaders()
	h := pubsub.Header{"plain": "v", "empty": "", "space": " ", "spaces": " both ", "lead": " x", "trail": "x ", "bars": "|x|"}
	for k := range own {
		h[k] = "the user's " + k
		h[strings.ToLower(k)] = "lower " + k
	}
	h[hdrUser+"x"] = "a key that looks like a wire key"
	h[hdrUserPadded+"x"] = " and one that looks padded "
	if err := pubsub.ValidateHeader(h); err != nil {
		t.Fatal(err)
	}
	wire := conveyorHeaders()
	putHeader(wire, h)
	for k, v := range own {
		if got := wire[k]; len(got) != 1 || got[0] != v[0] {
			t.Errorf("conveyor's header %s after putHeader: %q, want %q", k, got, v)
		}
	}
	for k, vs := range wire {
		for _, v := range vs {
			if v != strings.TrimSpace(v) {
				t.Errorf("wire header %q has the value %q, which NATS would trim", k, v)
			}
		}
	}
	if got := headerOf(wire); !maps.Equal(got, h) {
		t.Fatalf("headerOf(putHeader(h)) = %q, want %q", got, h)
	}
	if got := headerOf(conveyorHeaders()); got != nil {
		t.Fatalf("headerOf a message without a header = %q, want nil", got)
	}
	own = conveyorHeaders()
	if n := testing.AllocsPerRun(100, func() { headerOf(own) }); n != 0 {
		t.Fatalf("headerOf a message without a header allocates %v times, want 0", n)
	}
}

// wireSize counts no fewer bytes than the largest valid header takes on
// the wire.
func TestWireSize(t *testing.T) {
	t.Parallel()
	h := pubsub.Header{}
	size := 0
	for i := range pubsub.MaxHeaderKeys {
		k := fmt.Sprintf("k%02d", i)
		h[k] = ""
		size += len(k)
	}
	per := (pubsub.MaxHeaderSize - size) / pubsub.MaxHeaderKeys
	for k := range h {
		h[k] = " " + strings.Repeat("v", per-1) // each one padded
	}
	if err := pubsub.ValidateHeader(h); err != nil {
		t.Fatal(err)
	}
	wire := nats.Header{}
	putHeader(wire, h)
	n := 0
	for k, vs := range wire {
		n += len(k) + len(": ") + len(vs[0]) + len("\r\n")
	}
	if n > wireSize(h) {
		t.Fatalf("a header of %d keys takes %d bytes on the wire, more than the %d wireSize says", len(h), n, wireSize(h))
	}
}
