package dbpubsub

import (
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/pubsub"
)

// parseHeader decodes b, a JSON object whose values are strings, as
// json.Unmarshal into a pubsub.Header would, without its reflection: it is
// the form PostgreSQL prints a jsonb object of strings in ({"k": "v", ...}),
// which every delivery with a header decodes. ok is false for anything it
// does not take on (an escape in a string, a value of another type, bytes
// that are not UTF-8, anything that is not such an object): the caller
// then decodes b with json.Unmarshal, so that the result is the same.
func parseHeader(b []byte) (h pubsub.Header, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	h = pubsub.Header{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return h, skipSpace(b, i+1) == len(b)
	}
	for {
		k, j, ok := parseString(b, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		v, j, ok := parseString(b, skipSpace(b, i+1))
		if !ok {
			return nil, false
		}
		h[headerKey(k)] = string(v)
		i = skipSpace(b, j)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return h, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// parseString returns the bytes of the JSON string at b[i:] and the index
// after it; ok is false unless it is a string without escapes or control
// characters, of valid UTF-8, whose bytes are then its value.
func parseString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// skipSpace returns the index of the first byte of b from i on that is no
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// headerKey returns k as a string, without allocating one for the keys
// the trace context propagates in (W3C Trace Context), which nearly every
// header holds.
func headerKey(k []byte) string {
	switch string(k) {
	case "traceparent":
		return "traceparent"
	case "tracestate":
		return "tracestate"
	}
	return string(k)
}
