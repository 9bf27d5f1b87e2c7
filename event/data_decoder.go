package event

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"sync"
	"time"
)

// dataDecoder decodes event data as json.Unmarshal does, with a
// json.Decoder whose decoding state (which Unmarshal makes anew per call)
// serves one event after another (see dataDecoders).
type dataDecoder struct {
	r   bytes.Reader
	dec *json.Decoder
}

// maxPooledData is the longest data decoded with a pooled dataDecoder: the
// decoder keeps a buffer as long as the data it read.
const maxPooledData = 64 << 10

// dataDecoders holds the dataDecoders not in use.
var dataDecoders = sync.Pool{New: func() any {
	d := new(dataDecoder)
	d.dec = json.NewDecoder(&d.r)
	return d
}}

// unmarshalData does json.Unmarshal(data, v), for a v whose decoding keeps
// no slice of the bytes it reads (see keepsInput) and that the caller drops
// when it fails (a listener's new event): its result and its error are
// json.Unmarshal's, but a v that failed may hold other parts of the data
// than json.Unmarshal would have left in it. The decoder's buffer holds
// the bytes, and the next event's overwrite them.
//
// A json.Decoder reads one value of a stream, where Unmarshal wants its
// input to be exactly one. The decoder gets data without the white space
// around it, which it would keep for the next event; it validates the
// value it reads before decoding it, as Unmarshal does, so that data that
// is not JSON leaves v untouched. When it fails, or reads less than all of
// data (a value followed by more), json.Unmarshal decodes data again, for
// its error (and its result, were there one), and the decoder, in whatever
// state that left it, goes to the garbage collector. Data is not
// validated beforehand: the decoder's own pass is the check.
func unmarshalData(data []byte, v any) error {
	value := trimJSONSpace(data)
	if len(value) > maxPooledData {
		return json.Unmarshal(data, v)
	}
	d := dataDecoders.Get().(*dataDecoder)
	d.r.Reset(value)
	start := d.dec.InputOffset()
	if err := d.dec.Decode(v); err != nil || d.dec.InputOffset()-start != int64(len(value)) {
		return json.Unmarshal(data, v)
	}
	d.r.Reset(nil)
	dataDecoders.Put(d)
	return nil
}

// trimJSONSpace returns b without the JSON white space at its ends.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	// keepsNothing are the unmarshalers known to copy what they keep.
	keepsNothing = map[reflect.Type]bool{
		reflect.TypeFor[time.Time]():       true,
		reflect.TypeFor[json.RawMessage](): true,
	}
)

// keepsInput reports whether decoding JSON into a value of type t may keep
// a slice of its input: t, or a type it holds, has an UnmarshalJSON or
// UnmarshalText method (other than those of keepsNothing), which
// encoding/json hands slices of its input. Such methods should copy what
// they keep, but one that does not worked on the private copy of the data
// a delivery has, and must go on working.
func keepsInput(t reflect.Type) bool {
	return mayKeep(t, map[reflect.Type]bool{})
}

func mayKeep(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] || keepsNothing[t] {
		return false
	}
	seen[t] = true
	if t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType) {
		return true
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if p := reflect.PointerTo(t); p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType) {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return mayKeep(t.Elem(), seen)
	case reflect.Map:
		return mayKeep(t.Key(), seen) || mayKeep(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if mayKeep(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	// An interface: a new value decodes into maps, slices, strings,
	// numbers and booleans, all copies.
	return false
}
