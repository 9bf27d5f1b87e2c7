package dbpubsub

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
)

// unmarshalHeader is what parseHeader stands in for.
func unmarshalHeader(b []byte) (pubsub.Header, error) {
	var h pubsub.Header
	err := json.Unmarshal(b, &h)
	return h, err
}

// parseHeaderCases are headers as PostgreSQL prints them, and others that
// parseHeader leaves to json.Unmarshal.
var parseHeaderCases = []struct {
	name, in string
	fast     bool // parseHeader decodes it itself
}{
	{"Empty", `{}`, true},
	{"Traceparent", `{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, true},
	{"TraceContext", `{"tracestate": "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, true},
	{"Compact", `{"a":"1","b":"2"}`, true},
	{"Whitespace", " \t\n{ \"a\" :\r\n\"1\" ,\"b\": \"2\" } \n", true},
	{"EmptyStrings", `{"": ""}`, true},
	{"Duplicate", `{"a": "1", "a": "2"}`, true},
	{"UTF8", `{"clé": "été ☃ 𝄞"}`, true},
	{"Escape", `{"a": "x\"y"}`, false},
	{"EscapedKey", `{"\u0061": "1"}`, false},
	{"Backslash", `{"a": "C:\\dir"}`, false},
	{"InvalidUTF8", "{\"a\": \"\xff\"}", false},
	{"ControlCharacter", "{\"a\": \"x\ty\"}", false},
	{"Number", `{"a": 1}`, false},
	{"Null", `null`, false},
	{"NullValue", `{"a": null}`, false},
	{"Nested", `{"a": {"b": "c"}}`, false},
	{"Array", `["a"]`, false},
	{"TrailingComma", `{"a": "1",}`, false},
	{"MissingColon", `{"a" "1"}`, false},
	{"Unterminated", `{"a": "1"`, false},
	{"UnterminatedString", `{"a": "1`, false},
	{"TrailingGarbage", `{"a": "1"} x`, false},
	{"Nothing", ``, false},
	{"Spaces", `   `, false},
}

// TestParseHeader checks that parseHeader decodes the headers PostgreSQL
// prints, and that decodeHeader's result is json.Unmarshal's for every
// input, whether parseHeader took it on or not.
func TestParseHeader(t *testing.T) {
	t.Parallel()
	for _, c := range parseHeaderCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want, err := unmarshalHeader([]byte(c.in))
			got, ok := parseHeader([]byte(c.in))
			if ok != c.fast {
				t.Fatalf("parseHeader(%q) ok = %v, want %v", c.in, ok, c.fast)
			}
			if ok && (err != nil || !reflect.DeepEqual(got, want)) {
				t.Errorf("parseHeader(%q) = %#v, json.Unmarshal = %#v, %v", c.in, got, want, err)
			}
			if err != nil {
				want = nil
			}
			if got := testTopicState().decodeHeader(1, []byte(c.in)); !reflect.DeepEqual(got, want) {
				t.Errorf("decodeHeader(%q) = %#v, want %#v", c.in, got, want)
			}
		})
	}
}

// FuzzDecodeHeader checks that parseHeader, when it decodes an input,
// decodes it as json.Unmarshal does.
func FuzzDecodeHeader(f *testing.F) {
	for _, c := range parseHeaderCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseHeader(b)
		if !ok {
			return
		}
		want, err := unmarshalHeader(b)
		if err != nil {
			t.Fatalf("parseHeader(%q) = %#v, but json.Unmarshal fails: %v", b, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseHeader(%q) = %#v, json.Unmarshal = %#v", b, got, want)
		}
	})
}

// BenchmarkDecodeHeader decodes the header otelconveyor gives every
// message, as PostgreSQL prints it, with decodeHeader and, for reference,
// with json.Unmarshal.
func BenchmarkDecodeHeader(b *testing.B) {
	in := []byte(`{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
	b.Run("decodeHeader", func(b *testing.B) {
		st := testTopicState()
		b.ReportAllocs()
		for b.Loop() {
			if h := st.decodeHeader(1, in); len(h) != 1 {
				b.Fatal(h)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if h, err := unmarshalHeader(in); err != nil || len(h) != 1 {
				b.Fatal(h, err)
			}
		}
	})
}

// testTopicState is a topic's state that logs nowhere, enough for
// decodeHeader.
func testTopicState() *topicState {
	return &topicState{ps: &store{opts: Options{Logger: slog.New(slog.DiscardHandler)}}, name: "t"}
}
