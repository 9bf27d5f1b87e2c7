package event_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/event"
)

// The CloudEvents specification, as the official SDKs read it: attribute
// names are case-sensitive, unknown members are extensions, sources are
// URI-references, data may come base64-encoded.

const head = `"specversion":"1.0","id":"real","source":"/s","type":"t"`

func TestDecodeNamesAreCaseSensitive(t *testing.T) {
	cases := []struct{ name, in, text string }{
		// An envelope whose required attribute is spelt in another case
		// lacks it.
		{"OnlyID", `{"specversion":"1.0","ID":"1","source":"s","type":"t"}`, `"ID"`},
		{"OnlyType", `{"specversion":"1.0","id":"1","source":"s","Type":"t"}`, `"Type"`},
		{"OnlySpecVersion", `{"SpecVersion":"1.0","id":"1","source":"s","type":"t"}`, `"SpecVersion"`},
		// A later member in another case does not override the real one.
		{"ForgedID", `{` + head + `,"ID":"forged-id"}`, `"ID"`},
		{"ForgedSource", `{` + head + `,"Source":"/forged"}`, `"Source"`},
		{"ForgedType", `{` + head + `,"Type":"forged"}`, `"Type"`},
		{"ForgedSubject", `{` + head + `,"subject":"a","Subject":"forged"}`, `"Subject"`},
		{"ForgedTime", `{` + head + `,"time":"2026-01-02T03:04:05Z","TIME":"2000-01-01T00:00:00Z"}`, `"TIME"`},
		{"ForgedData", `{` + head + `,"data":{"id":1},"Data":{"id":2}}`, `"Data"`},
		{"ForgedDataContentType", `{` + head + `,"DataContentType":"text/xml"}`, `"DataContentType"`},
		// Extension names are lower-case letters and digits.
		{"Hyphen", `{` + head + `,"trace-parent":"x"}`, `"trace-parent"`},
		{"Underscore", `{` + head + `,"trace_parent":"x"}`, `"trace_parent"`},
		{"EmptyName", `{` + head + `,"":"x"}`, "empty name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, err := event.Decode([]byte(c.in))
			if !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("Decode: %+v, %v; want ErrMalformed naming %s", env, err, c.text)
			}
			// json.Unmarshal into an Envelope reads the same way.
			var u event.Envelope
			if err := json.Unmarshal([]byte(c.in), &u); !errors.Is(err, event.ErrMalformed) {
				t.Fatalf("json.Unmarshal: %+v, %v; want ErrMalformed", u, err)
			}
		})
	}
}

func TestDecodeKeepsExtensions(t *testing.T) {
	in := `{` + head + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",` +
		`"tracestate":"congo=t61rcWkgMzE","priority":7,"sampled":true,"gone":null,"data":{"id":1}}`
	env, err := event.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"traceparent": `"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`,
		"tracestate":  `"congo=t61rcWkgMzE"`, "priority": `7`, "sampled": `true`,
	}
	if len(env.Extensions) != len(want) {
		t.Errorf("Extensions %s, want %v", env.Extensions, want)
	}
	for k, v := range want {
		if string(env.Extensions[k]) != v {
			t.Errorf("Extensions[%q] = %s, want %s", k, env.Extensions[k], v)
		}
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	wire := `{"specversion":"1.0","id":"real","source":"/s","type":"t","priority":7,"sampled":true,` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"congo=t61rcWkgMzE","data":{"id":1}}`
	if string(b) != wire {
		t.Errorf("Marshal:\n got %s\nwant %s", b, wire)
	}

	for _, c := range []struct{ name, in, text string }{
		{"Object", `{` + head + `,"ext":{"a":1}}`, "an object"},
		{"Array", `{` + head + `,"ext":[1]}`, "an array"},
	} {
		if _, err := event.Decode([]byte(c.in)); !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: Decode: %v; want ErrMalformed mentioning %q", c.name, err, c.text)
		}
	}
}

func TestDecodeDuplicateMembers(t *testing.T) {
	for _, c := range []struct{ name, in, member string }{
		{"ID", `{` + head + `,"id":"forged-id"}`, "id"},
		{"Type", `{` + head + `,"type":"forged"}`, "type"},
		{"Data", `{` + head + `,"data":1,"data":2}`, "data"},
		{"Extension", `{` + head + `,"ext":"a","ext":"b"}`, "ext"},
		{"NullThenValue", `{` + head + `,"subject":null,"subject":"x"}`, "subject"},
		{"Escaped", `{` + head + `,"\u0069d":"forged-id"}`, "id"},
	} {
		_, err := event.Decode([]byte(c.in))
		if !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), `"`+c.member+`" appears more than once`) {
			t.Errorf("%s: Decode: %v; want ErrMalformed naming %q twice", c.name, err, c.member)
		}
	}
}

func TestSourceIsURIReference(t *testing.T) {
	for _, s := range []string{"/orders", "conveyor", "urn:example:orders", "https://example.com/a?b=c#d",
		"http://[::1]:8080/x", "/caf%C3%A9", "//host/p", "mailto:a@example.com", "./a;b=c,d"} {
		b, err := event.Encode(OrderPlaced{}, event.WithSource(s))
		if err != nil {
			t.Errorf("WithSource(%q): %v", s, err)
			continue
		}
		if env, err := event.Decode(b); err != nil || env.Source != s {
			t.Errorf("Decode(Encode(WithSource(%q))) = %q, %v", s, env.Source, err)
		}
	}
	for _, s := range []string{"%zz", "%4", "http://[::1", "http://::1]/", "/a[1]", "a b", "café", "a\x00", "a#b#c", "1http://x", ":x"} {
		_, err := event.Encode(OrderPlaced{}, event.WithSource(s))
		if !errors.Is(err, event.ErrInvalidEvent) || !strings.Contains(err.Error(), "not a URI-reference") {
			t.Errorf("WithSource(%q): %v; want ErrInvalidEvent: not a URI-reference", s, err)
		}
		in, _ := json.Marshal(map[string]string{"specversion": "1.0", "id": "1", "source": s, "type": "t"})
		if _, err := event.Decode(in); !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), "not a URI-reference") {
			t.Errorf("Decode of source %q: %v; want ErrMalformed: not a URI-reference", s, err)
		}
	}
}

func TestMarshalJSONRefusesInvalidEnvelopes(t *testing.T) {
	valid := func() event.Envelope {
		return event.Envelope{SpecVersion: "1.0", ID: "1", Source: "/s", Type: "t"}
	}
	cases := []struct {
		name string
		edit func(*event.Envelope)
		text string
	}{
		{"Zero", func(e *event.Envelope) { *e = event.Envelope{} }, "empty event type"},
		{"NoSpecVersion", func(e *event.Envelope) { e.SpecVersion = "" }, "specversion"},
		{"OldSpecVersion", func(e *event.Envelope) { e.SpecVersion = "0.3" }, "specversion"},
		{"NoID", func(e *event.Envelope) { e.ID = "" }, "empty id"},
		{"NoSource", func(e *event.Envelope) { e.Source = "" }, "empty source"},
		{"BadSource", func(e *event.Envelope) { e.Source = "%zz" }, "not a URI-reference"},
		{"NoType", func(e *event.Envelope) { e.Type = "" }, "empty event type"},
		{"Year10000", func(e *event.Envelope) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "outside years"},
		{"XMLContentType", func(e *event.Envelope) { e.DataContentType = "text/xml" }, "not JSON"},
		{"BadData", func(e *event.Envelope) { e.Data = json.RawMessage(`{`) }, "not valid JSON"},
		{"RelativeDataSchema", func(e *event.Envelope) { e.DataSchema = "/schema.json" }, "not an absolute URI"},
		{"UpperCaseExtension", func(e *event.Envelope) { e.Extensions = map[string]json.RawMessage{"ID": json.RawMessage(`"x"`)} }, `"ID"`},
		{"AttributeAsExtension", func(e *event.Envelope) { e.Extensions = map[string]json.RawMessage{"id": json.RawMessage(`"x"`)} }, `"id"`},
		{"Base64AsExtension", func(e *event.Envelope) {
			e.Extensions = map[string]json.RawMessage{"data_base64": json.RawMessage(`"AA=="`)}
		}, `"data_base64"`},
		{"ObjectExtension", func(e *event.Envelope) { e.Extensions = map[string]json.RawMessage{"ext": json.RawMessage(`{}`)} }, "an object"},
		{"InvalidExtension", func(e *event.Envelope) { e.Extensions = map[string]json.RawMessage{"ext": json.RawMessage(`"x`)} }, "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := valid()
			c.edit(&e)
			b, err := json.Marshal(e)
			if !errors.Is(err, event.ErrInvalidEvent) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("Marshal: %s, %v; want ErrInvalidEvent mentioning %q", b, err, c.text)
			}
			if err := e.Validate(); !errors.Is(err, event.ErrInvalidEvent) {
				t.Fatalf("Validate: %v; want ErrInvalidEvent", err)
			}
			// An Option can set the same fields: Encode refuses them too.
			_, err = event.Encode(OrderPlaced{}, func(env *event.Envelope) {
				*env = e
				if c.name == "NoType" || c.name == "Zero" {
					env.Type = ""
				}
			})
			if !errors.Is(err, event.ErrInvalidEvent) {
				t.Fatalf("Encode: %v; want ErrInvalidEvent", err)
			}
		})
	}
	if b, err := json.Marshal(valid()); err != nil || string(b) != `{"specversion":"1.0","id":"1","source":"/s","type":"t"}` {
		t.Errorf("Marshal of a minimal envelope: %s, %v", b, err)
	}
}

func TestDecodeData(t *testing.T) {
	// What the official SDK writes for SetData("application/json", []byte(`{"id":42}`)),
	// with a dataschema and a traceparent.
	sdk := `{"specversion":"1.0","id":"sdk-1","source":"/sdk","type":"com.example.order.placed",` +
		`"datacontenttype":"application/json","dataschema":"https://example.com/schemas/order.json",` +
		`"time":"2026-01-02T03:04:05Z","data_base64":"eyJpZCI6NDJ9",` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	env, err := event.Decode([]byte(sdk))
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Data) != `{"id":42}` || env.DataSchema != "https://example.com/schemas/order.json" ||
		env.DataContentType != "application/json" || env.Extensions["traceparent"] == nil {
		t.Errorf("Decode of the SDK's event: %+v", env)
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"specversion":"1.0","id":"sdk-1","source":"/sdk","type":"com.example.order.placed",` +
		`"time":"2026-01-02T03:04:05Z","datacontenttype":"application/json","dataschema":"https://example.com/schemas/order.json",` +
		`"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","data":{"id":42}}`
	if string(b) != want {
		t.Errorf("Marshal:\n got %s\nwant %s", b, want)
	}

	// Explicit null data is not absent data, and stays so through the wire form.
	null, err := event.Decode([]byte(`{` + head + `,"data":null}`))
	if err != nil || string(null.Data) != "null" {
		t.Fatalf("Decode of data null: Data %q, %v; want null", null.Data, err)
	}
	if b, err := json.Marshal(null); err != nil || !strings.HasSuffix(string(b), `,"data":null}`) {
		t.Errorf("Marshal of data null: %s, %v", b, err)
	}
	absent, err := event.Decode([]byte(`{` + head + `}`))
	if err != nil || absent.Data != nil {
		t.Fatalf("Decode without data: Data %q, %v; want nil", absent.Data, err)
	}
	if b, err := json.Marshal(absent); err != nil || strings.Contains(string(b), "data") {
		t.Errorf("Marshal without data: %s, %v", b, err)
	}

	for _, c := range []struct{ name, in, data string }{
		{"Base64NoContentType", `{` + head + `,"data_base64":"WzEsMl0="}`, `[1,2]`},
		{"Base64JSONSuffix", `{` + head + `,"datacontenttype":"application/cloudevents+json","data_base64":"InMi"}`, `"s"`},
		{"Base64Empty", `{` + head + `,"data_base64":""}`, ``},
		{"Base64Null", `{` + head + `,"data_base64":null}`, ``},
	} {
		env, err := event.Decode([]byte(c.in))
		if err != nil || string(env.Data) != c.data {
			t.Errorf("%s: Decode: Data %q, %v; want %q", c.name, env.Data, err, c.data)
		}
	}
	for _, c := range []struct{ name, in, text string }{
		{"Base64NotJSON", `{` + head + `,"datacontenttype":"application/json","data_base64":"AAE="}`, "data_base64 does not hold JSON"},
		{"Base64XML", `{` + head + `,"datacontenttype":"text/xml","data_base64":"PGEvPg=="}`, `datacontenttype "text/xml" is not JSON`},
		{"Base64Invalid", `{` + head + `,"data_base64":"%%%"}`, "not base64"},
		{"Base64NotString", `{` + head + `,"data_base64":1}`, "want a string"},
		{"DataAndBase64", `{` + head + `,"data":1,"data_base64":"MQ=="}`, "both data and data_base64"},
		{"RelativeDataSchema", `{` + head + `,"dataschema":"schema.json"}`, "not an absolute URI"},
		{"IDNotString", `{"specversion":"1.0","id":1,"source":"s","type":"t"}`, "want a string"},
	} {
		if _, err := event.Decode([]byte(c.in)); !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: Decode: %v; want ErrMalformed mentioning %q", c.name, err, c.text)
		}
	}
}
