package event

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEncodedLen checks that encodedLen is the length of an envelope with
// every attribute and nothing to escape: Encode allocates once, and no
// more than it needs.
func TestEncodedLen(t *testing.T) {
	t.Parallel()
	e := Envelope{
		SpecVersion:     SpecVersion,
		ID:              NewID(),
		Source:          "/orders",
		Type:            "com.example.order.placed",
		Subject:         "42",
		Time:            time.Date(2026, 1, 2, 15, 4, 5, 999999999, time.FixedZone("", -(23*3600+59*60))),
		DataContentType: "application/json; charset=utf-8",
		DataSchema:      "https://example.com/order.json",
		Data:            json.RawMessage(`{"id":42}`),
		Extensions:      map[string]json.RawMessage{"traceparent": json.RawMessage(`"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`), "n": json.RawMessage(`1`)},
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	// Its time, with nanoseconds and an offset, is as long as times get:
	// encodedLen is exact.
	if got, est := len(e.appendJSON(nil, nil)), e.encodedLen(); got != est {
		t.Errorf("the wire form has %d bytes, encodedLen says %d", got, est)
	}
}
