package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := event.NewID()
		if !uuidV4.MatchString(id) || seen[id] {
			t.Fatalf("NewID() = %q: want a fresh version 4 UUID", id)
		}
		seen[id] = true
	}
}

// TestEncodeIDs checks the ids Encode makes from its buffered random
// bytes: fresh version 4 UUIDs, across the refills of the buffer, from
// several goroutines at once.
func TestEncodeIDs(t *testing.T) {
	const goroutines, each = 4, 500
	ids := make(chan string, goroutines*each)
	errs := make(chan error, goroutines)
	for range goroutines {
		go func() {
			for range each {
				b, err := event.Encode(OrderPlaced{ID: 1})
				if err != nil {
					errs <- err
					return
				}
				env, err := event.Decode(b)
				if err != nil {
					errs <- err
					return
				}
				ids <- env.ID
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if !uuidV4.MatchString(id) || seen[id] {
			t.Fatalf("Encode made the id %q: want a fresh version 4 UUID", id)
		}
		seen[id] = true
	}
}

func TestEncodeWireForm(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.UTC)
	b, err := event.Encode(OrderPlaced{ID: 42, Email: "a@example.com"},
		event.WithID("id-1"), event.WithSource("/shop"), event.WithTime(at), event.WithSubject("order-42"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"specversion":"1.0","id":"id-1","source":"/shop","type":"com.example.order.placed","subject":"order-42",` +
		`"time":"2026-01-02T15:04:05.123456789Z","datacontenttype":"application/json","data":{"id":42,"email":"a@example.com"}}`
	if string(b) != want {
		t.Errorf("Encode:\n got %s\nwant %s", b, want)
	}

	// Defaults: a fresh id, DefaultSource, now, no subject.
	before := time.Now()
	b, err = event.Encode(&OrderShipped{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !uuidV4.MatchString(m["id"].(string)) || m["source"] != event.DefaultSource || m["subject"] != nil {
		t.Errorf("defaults: %s", b)
	}
	tm, err := time.Parse(time.RFC3339Nano, m["time"].(string))
	if err != nil || tm.Before(before.Add(-time.Second)) || tm.After(time.Now()) {
		t.Errorf("time %v (%v), want now", m["time"], err)
	}
}

type unmarshalable struct{ C chan int }

func (unmarshalable) Type() event.EventType { return "com.example.chan" }

type nilReceiver struct{ v string }

func (n *nilReceiver) Type() event.EventType { return event.EventType(n.v) }

type spaced struct{}

func (spaced) Type() event.EventType { return "order placed" }

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		e    event.Event
		opts []event.Option
		text string
	}{
		{"Nil", nil, nil, "nil event"},
		{"EmptyType", badEvent{}, nil, "empty event type"},
		{"SpaceInType", spaced{}, nil, "white space"},
		{"NilPointerTypePanics", (*nilReceiver)(nil), nil, "panicked"},
		{"Unmarshalable", unmarshalable{}, nil, "unsupported type"},
		{"EmptyID", OrderPlaced{}, []event.Option{event.WithID("")}, "empty id"},
		{"EmptySource", OrderPlaced{}, []event.Option{event.WithSource("")}, "empty source"},
		{"Year10000", OrderPlaced{}, []event.Option{event.WithTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}, "outside years"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := event.Encode(c.e, c.opts...)
			if !errors.Is(err, event.ErrInvalidEvent) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("Encode: %v; want ErrInvalidEvent mentioning %q", err, c.text)
			}
		})
	}
}

func TestEncodeEscapes(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\back`, "ctl\x00\x01\n\r\t\x1f", "<html>&", "ü€😀", "bad\xffutf8", "sep\u2028\u2029"} {
		b, err := event.Encode(OrderPlaced{}, event.WithID(s), event.WithSubject(s))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%q: the wire form is not JSON: %v\n%s", s, err, b)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if m["id"] != want || m["subject"] != want {
			t.Errorf("%q came back as %q", s, m["id"])
		}
	}
}

func TestDecode(t *testing.T) {
	good, err := event.Encode(OrderPlaced{ID: 1}, event.WithID("x"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != "x" || env.Type != "com.example.order.placed" || string(env.Data) != `{"id":1}` || env.SpecVersion != "1.0" {
		t.Errorf("Decode: %+v", env)
	}

	ok := []struct{ name, in string }{
		{"Minimal", `{"specversion":"1.0","id":"1","source":"s","type":"t"}`},
		{"Extensions", `{"specversion":"1.0","id":"1","source":"s","type":"t","traceparent":"00-ab","data":[1,2]}`},
		{"JSONContentType", `{"specversion":"1.0","id":"1","source":"s","type":"t","datacontenttype":"application/vnd.x+json; charset=utf-8","data":"x"}`},
		{"NullData", `{"specversion":"1.0","id":"1","source":"s","type":"t","data":null}`},
		{"Whitespace", "\n {\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"s\",\"type\":\"t\"} \n"},
	}
	for _, c := range ok {
		if _, err := event.Decode([]byte(c.in)); err != nil {
			t.Errorf("%s: Decode: %v", c.name, err)
		}
	}

	bad := []struct{ name, in, text string }{
		{"Empty", ``, "not a JSON CloudEvent"},
		{"NotJSON", `hello`, "not a JSON CloudEvent"},
		{"Array", `[1]`, "not a JSON CloudEvent"},
		{"Trailing", `{"specversion":"1.0","id":"1","source":"s","type":"t"} {}`, "after top-level value"},
		{"Garbage", `{"specversion":"1.0","id":"1","source":"s","type":"t"} x`, "after top-level value"},
		{"NoSpecVersion", `{"id":"1","source":"s","type":"t"}`, "specversion"},
		{"OldSpecVersion", `{"specversion":"0.3","id":"1","source":"s","type":"t"}`, "specversion"},
		{"NoID", `{"specversion":"1.0","source":"s","type":"t"}`, "empty id"},
		{"NoSource", `{"specversion":"1.0","id":"1","type":"t"}`, "empty source"},
		{"NoType", `{"specversion":"1.0","id":"1","source":"s"}`, "empty event type"},
		{"BadTime", `{"specversion":"1.0","id":"1","source":"s","type":"t","time":"yesterday"}`, "not an RFC 3339 timestamp"},
		{"Binary", `{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"AAE="}`, "data_base64"},
		{"XMLData", `{"specversion":"1.0","id":"1","source":"s","type":"t","datacontenttype":"text/xml","data":"<a/>"}`, "not JSON"},
	}
	for _, c := range bad {
		_, err := event.Decode([]byte(c.in))
		if !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: Decode: %v; want ErrMalformed mentioning %q", c.name, err, c.text)
		}
	}
}

// FuzzDecode checks that Decode never panics, and that what it accepts
// survives a round trip through the wire form unchanged.
func FuzzDecode(f *testing.F) {
	for _, e := range []event.Event{OrderPlaced{ID: 1, Email: "ü@example.com"}, &OrderShipped{Parcels: []string{"a"}}} {
		b, err := event.Encode(e, event.WithSubject("s"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","data":null}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","time":"2026-01-02T15:04:05+02:00","data":{"a":[1,{"b":null}]}}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"AAE="}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","data_base64":"eyJpZCI6NDJ9","dataschema":"https://x/s"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","traceparent":"00-ab","n":1.5e3,"b":false,"ID":"x"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","id":"2"}`,
		`{"specversion":"1.0","id":"1","source":"http://[::1]/%41","type":"t"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t","datacontenttype":"application/cloudevents+json"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t\u0000"}`,
		`{"specversion":"1.0","id":"1","source":"s","type":"t"} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		env, err := event.Decode(in)
		if err != nil {
			if !errors.Is(err, event.ErrMalformed) {
				t.Fatalf("Decode error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// encoding/json, with exact names, reads the same members.
		var m map[string]any
		if err := json.Unmarshal(in, &m); err != nil {
			t.Fatalf("Decode accepted what encoding/json refuses: %v", err)
		}
		if m["id"] != env.ID || m["source"] != env.Source || m["type"] != string(env.Type) || m["subject"] != nil && m["subject"] != env.Subject {
			t.Fatalf("Decode read %+v, encoding/json %v", env, m)
		}
		for k, v := range env.Extensions {
			var x any
			if err := json.Unmarshal(v, &x); err != nil || x != m[k] {
				t.Fatalf("extension %q = %s, encoding/json read %v", k, v, m[k])
			}
		}
		out, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("Marshal of a decoded envelope: %v", err)
		}
		again, err := event.Decode(out)
		if err != nil {
			t.Fatalf("Decode(Marshal(Decode(%q))) = %v", in, err)
		}
		if again.ID != env.ID || again.Type != env.Type || again.Source != env.Source || again.Subject != env.Subject ||
			!again.Time.Equal(env.Time) || again.DataContentType != env.DataContentType || again.DataSchema != env.DataSchema ||
			(again.Data == nil) != (env.Data == nil) || !sameJSON(again.Data, env.Data) ||
			!maps.EqualFunc(again.Extensions, env.Extensions, sameJSON) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", env, again)
		}
	})
}

// sameJSON reports whether a and b are the same JSON text but for white
// space and the escaping of <, > and & (encoding/json's HTML escaping).
func sameJSON(a, b json.RawMessage) bool {
	norm := func(v json.RawMessage) []byte {
		var c, h bytes.Buffer
		if len(v) > 0 {
			if err := json.Compact(&c, v); err != nil {
				return nil
			}
		}
		json.HTMLEscape(&h, c.Bytes())
		return h.Bytes()
	}
	return bytes.Equal(norm(a), norm(b))
}
