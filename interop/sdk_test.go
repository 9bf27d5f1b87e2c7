package interop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	ce "github.com/cloudevents/sdk-go/v2/event"

	"github.com/conveyorgo/conveyor/event"
)

type OrderPlaced struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

func (OrderPlaced) Type() event.EventType { return "com.example.order.placed" }

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// sdkRead reads b with the SDK and validates it, as an SDK consumer does.
func sdkRead(t *testing.T, b []byte) ce.Event {
	t.Helper()
	var e ce.Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("the SDK cannot read %s: %v", b, err)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("the SDK finds %s invalid: %v", b, err)
	}
	return e
}

// sdkWrite returns e in the structured JSON format, as the SDK writes it.
func sdkWrite(t *testing.T, e ce.Event) []byte {
	t.Helper()
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConveyorToSDK(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.UTC)
	b, err := event.Encode(OrderPlaced{ID: 42, Email: "a@example.com"},
		event.WithID("id-1"), event.WithSource("/shop"), event.WithSubject("order-42"), event.WithTime(at))
	if err != nil {
		t.Fatal(err)
	}
	e := sdkRead(t, b)
	var data OrderPlaced
	if err := e.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	if e.ID() != "id-1" || e.Source() != "/shop" || e.Type() != "com.example.order.placed" || e.Subject() != "order-42" ||
		!e.Time().Equal(at) || e.DataContentType() != event.ContentType || e.SpecVersion() != "1.0" ||
		data != (OrderPlaced{ID: 42, Email: "a@example.com"}) {
		t.Errorf("the SDK read %s as %v (data %+v)", b, e, data)
	}

	// Defaults (a fresh id, DefaultSource, now), and every source form.
	for _, src := range []string{"", "/orders-service", "urn:example:orders", "https://example.com/a?b=c#d", "http://[::1]:8080/x", "/caf%C3%A9"} {
		var opts []event.Option
		if src != "" {
			opts = append(opts, event.WithSource(src))
		}
		b, err := event.Encode(OrderPlaced{ID: 1}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if e := sdkRead(t, b); src != "" && e.Source() != src {
			t.Errorf("source %q read as %q", src, e.Source())
		}
	}

	// An envelope with a dataschema, extensions and explicit null data.
	env := event.Envelope{
		SpecVersion: "1.0", ID: "id-2", Source: "/shop", Type: "com.example.x",
		DataContentType: "application/json", DataSchema: "https://example.com/schemas/x.json",
		Extensions: map[string]json.RawMessage{
			"traceparent": json.RawMessage(`"` + traceparent + `"`),
			"priority":    json.RawMessage(`7`),
			"sampled":     json.RawMessage(`true`),
		},
		Data: json.RawMessage(`null`),
	}
	b, err = json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	e = sdkRead(t, b)
	ext := e.Extensions()
	if e.DataSchema() != env.DataSchema || ext["traceparent"] != traceparent || ext["sampled"] != true || string(e.Data()) != "null" {
		t.Errorf("the SDK read %s as %v", b, e)
	}
	if p, err := e.Context.GetExtension("priority"); err != nil || p != int32(7) {
		t.Errorf("priority extension read as %v (%T), %v", p, p, err)
	}

	// What conveyor refuses to write, the SDK refuses to read.
	for _, src := range []string{"%zz", "http://[::1"} {
		if _, err := event.Encode(OrderPlaced{}, event.WithSource(src)); !errors.Is(err, event.ErrInvalidEvent) {
			t.Errorf("Encode with source %q: %v, want ErrInvalidEvent", src, err)
		}
		var e ce.Event
		raw := `{"specversion":"1.0","id":"1","source":"` + src + `","type":"t"}`
		if err := json.Unmarshal([]byte(raw), &e); err == nil && e.Validate() == nil {
			t.Errorf("the SDK accepts source %q: the test's premise is wrong", src)
		}
	}
}

func TestSDKToConveyor(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newEvent := func() ce.Event {
		e := ce.New()
		e.SetID("sdk-1")
		e.SetSource("/sdk")
		e.SetType("com.example.order.placed")
		e.SetSubject("order-42")
		e.SetTime(at)
		e.SetDataSchema("https://example.com/schemas/order.json")
		e.SetExtension("traceparent", traceparent)
		e.SetExtension("tracestate", "congo=t61rcWkgMzE")
		e.SetExtension("priority", 7)
		e.SetExtension("sampled", true)
		return e
	}
	bytesData := newEvent() // data_base64, the common SetData with []byte
	if err := bytesData.SetData("application/json", []byte(`{"id":42,"email":"a@example.com"}`)); err != nil {
		t.Fatal(err)
	}
	structData := newEvent() // data, a JSON value
	if err := structData.SetData("application/json", OrderPlaced{ID: 42, Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	for name, sdk := range map[string]ce.Event{"Base64": bytesData, "JSON": structData} {
		t.Run(name, func(t *testing.T) {
			b := sdkWrite(t, sdk)
			if name == "Base64" && !bytes.Contains(b, []byte(`"data_base64"`)) {
				t.Fatalf("the SDK wrote %s: no data_base64, the test's premise is wrong", b)
			}
			env, err := event.Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			var data OrderPlaced
			if err := json.Unmarshal(env.Data, &data); err != nil {
				t.Fatal(err)
			}
			if env.ID != "sdk-1" || env.Source != "/sdk" || env.Type != "com.example.order.placed" || env.Subject != "order-42" ||
				!env.Time.Equal(at) || env.DataContentType != "application/json" ||
				env.DataSchema != "https://example.com/schemas/order.json" || data != (OrderPlaced{ID: 42, Email: "a@example.com"}) {
				t.Errorf("Decode(%s) = %+v", b, env)
			}
			want := map[string]string{"traceparent": `"` + traceparent + `"`, "tracestate": `"congo=t61rcWkgMzE"`, "priority": `7`, "sampled": `true`}
			if len(env.Extensions) != len(want) {
				t.Errorf("Extensions %s, want %v", env.Extensions, want)
			}
			for k, v := range want {
				if string(env.Extensions[k]) != v {
					t.Errorf("Extensions[%q] = %s, want %s", k, env.Extensions[k], v)
				}
			}

			// Through conveyor and back to the SDK, nothing is lost.
			out, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			back := sdkRead(t, out)
			var backData OrderPlaced
			if err := back.DataAs(&backData); err != nil {
				t.Fatal(err)
			}
			if back.ID() != sdk.ID() || back.Source() != sdk.Source() || back.Type() != sdk.Type() || back.Subject() != sdk.Subject() ||
				!back.Time().Equal(sdk.Time()) || back.DataSchema() != sdk.DataSchema() || backData != data {
				t.Errorf("round trip:\n%v\nbecame\n%v", sdk, back)
			}
			for k, v := range sdk.Extensions() {
				if back.Extensions()[k] != v {
					t.Errorf("extension %q: %v (%T) became %v (%T)", k, v, v, back.Extensions()[k], back.Extensions()[k])
				}
			}
		})
	}

	// A Service gets the SDK's event like its own (the data of a listener's type).
	env, err := event.Decode(sdkWrite(t, bytesData))
	if err != nil {
		t.Fatal(err)
	}
	var got OrderPlaced
	if err := json.Unmarshal(env.Data, &got); err != nil || got.ID != 42 {
		t.Errorf("data %s: %+v, %v", env.Data, got, err)
	}
}

func TestSDKEdgeCases(t *testing.T) {
	// Data the SDK writes that is not JSON: refused clearly.
	text := ce.New()
	text.SetID("1")
	text.SetSource("/sdk")
	text.SetType("t")
	if err := text.SetData("text/plain", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := event.Decode(sdkWrite(t, text)); !errors.Is(err, event.ErrMalformed) || !strings.Contains(err.Error(), `datacontenttype "text/plain" is not JSON`) {
		t.Errorf("Decode of text/plain data: %v", err)
	}

	// Explicit null data: both keep it, distinct from none.
	null := `{"specversion":"1.0","id":"1","source":"/s","type":"t","data":null}`
	env, err := event.Decode([]byte(null))
	if err != nil || string(env.Data) != "null" {
		t.Fatalf("Decode of data null: %q, %v", env.Data, err)
	}
	if e := sdkRead(t, []byte(null)); string(e.Data()) != "null" {
		t.Errorf("the SDK reads data null as %q", e.Data())
	}
	none, err := event.Decode([]byte(`{"specversion":"1.0","id":"1","source":"/s","type":"t"}`))
	if err != nil || none.Data != nil {
		t.Fatalf("Decode without data: %q, %v", none.Data, err)
	}

	// Names in another case are not the attributes: conveyor and the SDK
	// both refuse them, and neither takes the forged id.
	for _, in := range []string{
		`{"specversion":"1.0","id":"real","source":"/s","type":"t","ID":"forged-id"}`,
		`{"specversion":"1.0","ID":"1","source":"/s","type":"t"}`,
		`{"specversion":"1.0","id":"real","source":"/s","type":"t","Source":"/forged"}`,
	} {
		if env, err := event.Decode([]byte(in)); !errors.Is(err, event.ErrMalformed) {
			t.Errorf("Decode(%s) = %+v, %v; want ErrMalformed", in, env, err)
		}
		var e ce.Event
		if err := json.Unmarshal([]byte(in), &e); err == nil && e.ID() == "forged-id" {
			t.Errorf("the SDK took the forged id of %s", in)
		}
	}

	// Sources the SDK cannot parse, an object extension, a relative
	// dataschema: refused by both.
	for _, in := range []string{
		`{"specversion":"1.0","id":"1","source":"%zz","type":"t"}`,
		`{"specversion":"1.0","id":"1","source":"http://[::1","type":"t"}`,
		`{"specversion":"1.0","id":"1","source":"/s","type":"t","ext":{"a":1}}`,
		`{"specversion":"1.0","id":"1","source":"/s","type":"t","dataschema":"schema.json"}`,
	} {
		if _, err := event.Decode([]byte(in)); !errors.Is(err, event.ErrMalformed) {
			t.Errorf("Decode(%s): %v; want ErrMalformed", in, err)
		}
		var e ce.Event
		if err := json.Unmarshal([]byte(in), &e); err == nil && e.Validate() == nil {
			t.Errorf("the SDK accepts %s: the test's premise is wrong", in)
		}
	}

	// A member twice: the SDK takes the last, conveyor refuses.
	if _, err := event.Decode([]byte(`{"specversion":"1.0","id":"1","source":"/s","type":"t","id":"2"}`)); !errors.Is(err, event.ErrMalformed) {
		t.Errorf("Decode of id twice: %v; want ErrMalformed", err)
	}
}
