package event

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type decodeTarget struct {
	N    int               `json:"n"`
	S    string            `json:"s"`
	L    []float64         `json:"l"`
	M    map[string]any    `json:"m"`
	P    *decodeTarget     `json:"p"`
	Raw  json.RawMessage   `json:"raw"`
	T    time.Time         `json:"t"`
	Any  any               `json:"any"`
	Tags map[string]string `json:"tags,omitempty"`
}

// TestUnmarshalDataAsUnmarshal decodes every sample, one after another
// with the same pooled decoders, with unmarshalData and json.Unmarshal,
// and wants the same values and the same errors.
func TestUnmarshalDataAsUnmarshal(t *testing.T) {
	samples := append([]string{
		`{"n":1,"s":"a\"b","l":[1,2.5],"m":{"x":[true,null]},"p":{"n":2},"raw":{"a" : 1},"t":"2026-12-02T10:00:00.5Z","any":{"k":"v"}}`,
		` {"n":3} `, "\n{\"s\":\"é\"}\t", `{"n":"seven"}`, `{"n":1.5}`, `{"t":"yesterday"}`, `{"p":null}`,
		`{"n":1} {"n":2}`, `{"n":1}x`, `[1]`, `"s"`, `42`, `null`, ` null `, `{"n":1`, `{"l":[1,"x",3],"n":4}`,
		`{"n":5,"n":6}`, `{"unknown":{"deep":[1,2,3]},"n":7}`,
	}, jsonSamples...)
	for range 2 { // the second round on decoders that decoded the first
		for _, s := range samples {
			var got, want decodeTarget
			errGot := unmarshalData([]byte(s), &got)
			errWant := json.Unmarshal([]byte(s), &want)
			if (errGot == nil) != (errWant == nil) || errGot != nil && errGot.Error() != errWant.Error() {
				t.Errorf("%q: unmarshalData error %v, json.Unmarshal error %v", s, errGot, errWant)
			}
			if errWant == nil && !reflect.DeepEqual(got, want) { // a value that failed is dropped
				t.Errorf("%q: unmarshalData gave %+v, json.Unmarshal %+v", s, got, want)
			}
			var gotAny, wantAny any
			errGot = unmarshalData([]byte(s), &gotAny)
			errWant = json.Unmarshal([]byte(s), &wantAny)
			if (errGot == nil) != (errWant == nil) || errGot != nil && errGot.Error() != errWant.Error() || errWant == nil && !reflect.DeepEqual(gotAny, wantAny) {
				t.Errorf("%q into any: unmarshalData gave %#v, %v; json.Unmarshal %#v, %v", s, gotAny, errGot, wantAny, errWant)
			}
		}
	}
}

// TestUnmarshalDataKeepsNoInput checks that decoded values share no bytes
// with the decoder's buffer: a second decode leaves the first's values.
func TestUnmarshalDataKeepsNoInput(t *testing.T) {
	var first decodeTarget
	if err := unmarshalData([]byte(`{"s":"first","raw":[1,2,3],"m":{"k":"v"}}`), &first); err != nil {
		t.Fatal(err)
	}
	var second decodeTarget
	if err := unmarshalData([]byte(`{"s":"XXXXX","raw":[9,9,9],"m":{"k":"w"}}`), &second); err != nil {
		t.Fatal(err)
	}
	if first.S != "first" || string(first.Raw) != "[1,2,3]" || first.M["k"] != "v" {
		t.Errorf("the first decode's values changed: %+v", first)
	}
}

type keepingText struct{ b []byte }

func (k *keepingText) UnmarshalText(b []byte) error { k.b = b; return nil }

type textKey string

func (k *textKey) UnmarshalText(b []byte) error { *k = textKey(b); return nil }

type keepingJSON struct{ b []byte }

func (k *keepingJSON) UnmarshalJSON(b []byte) error { k.b = b; return nil }

func TestKeepsInput(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want bool
	}{
		{"PlainStruct", reflect.TypeFor[decodeTarget](), false},
		{"Pointer", reflect.TypeFor[*decodeTarget](), false},
		{"TextUnmarshaler", reflect.TypeFor[keepingText](), true},
		{"JSONUnmarshalerPointer", reflect.TypeFor[*keepingJSON](), true},
		{"InField", reflect.TypeFor[struct{ K keepingText }](), true},
		{"InSlice", reflect.TypeFor[struct{ K []*keepingJSON }](), true},
		{"InMapKey", reflect.TypeFor[map[textKey]int](), true},
		{"InMapValue", reflect.TypeFor[map[string][2]keepingJSON](), true},
		{"TimeAndRaw", reflect.TypeFor[struct {
			T time.Time
			R json.RawMessage
		}](), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keepsInput(tt.typ); got != tt.want {
				t.Errorf("keepsInput(%v) = %v, want %v", tt.typ, got, tt.want)
			}
		})
	}
}
