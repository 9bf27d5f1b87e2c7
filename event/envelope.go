package event

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// The CloudEvents attributes this package writes.
const (
	// SpecVersion is the CloudEvents version of the wire form.
	SpecVersion = "1.0"
	// ContentType is the datacontenttype of every event this package
	// encodes: its data is JSON.
	ContentType = "application/json"
	// DefaultSource is the CloudEvents source of events dispatched without
	// another one (see DispatcherOptions.Source and WithSource).
	DefaultSource = "conveyor"
)

// Envelope is an event in its wire form: a CloudEvents 1.0 event in the
// structured JSON format, its data a JSON value. Encoded, it reads
//
//	{"specversion":"1.0","id":"6f1c…","source":"conveyor","type":"com.example.order.placed",
//	 "time":"2026-01-02T15:04:05.999999999Z","datacontenttype":"application/json","data":{"id":42}}
//
// so that people and services in other languages can read the events kept
// by a backend. Attributes of other CloudEvents extensions are ignored by
// Decode.
type Envelope struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            EventType       `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            time.Time       `json:"time,omitzero"`
	DataContentType string          `json:"datacontenttype,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// envelopeFields is Envelope without its MarshalJSON method, for
// encoding/json to read into.
type envelopeFields Envelope

// MarshalJSON returns e in the wire form, as Encode writes it.
func (e Envelope) MarshalJSON() ([]byte, error) {
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		return nil, fmt.Errorf("%w: event %s: data is not valid JSON", ErrInvalidEvent, e.ID)
	}
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("%w: event %s: time %v is outside years 0-9999", ErrInvalidEvent, e.ID, e.Time)
	}
	var data bytes.Buffer
	if len(e.Data) > 0 {
		if err := json.Compact(&data, e.Data); err != nil {
			return nil, err
		}
		e.Data = data.Bytes()
	}
	return e.appendJSON(nil), nil
}

// appendJSON appends the wire form of e to b. e.Data must be compact JSON
// (or empty) and e.Time in years 0-9999.
func (e *Envelope) appendJSON(b []byte) []byte {
	b = append(b, `{"specversion":`...)
	b = appendString(b, e.SpecVersion)
	b = append(b, `,"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"source":`...)
	b = appendString(b, e.Source)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	if e.Subject != "" {
		b = append(b, `,"subject":`...)
		b = appendString(b, e.Subject)
	}
	if !e.Time.IsZero() {
		b = append(b, `,"time":"`...)
		b = e.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.DataContentType != "" {
		b = append(b, `,"datacontenttype":`...)
		b = appendString(b, e.DataContentType)
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it
// (invalid UTF-8 becomes U+FFFD) but without escaping <, > and &.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			switch r {
			case utf8.RuneError:
				b = append(b, `\ufffd`...)
			default:
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Option sets an attribute of an event being encoded or dispatched.
type Option func(*Envelope)

// WithID sets the event's id instead of a new random one. The pair
// (source, id) must be unique per distinct event: reuse an id only to say
// "this is the same event again", so that consumers deduplicate it.
func WithID(id string) Option { return func(e *Envelope) { e.ID = id } }

// WithSource sets the event's source (a URI-reference naming the producer,
// such as "/orders-service").
func WithSource(source string) Option { return func(e *Envelope) { e.Source = source } }

// WithSubject sets the event's subject (what the event is about, such as
// an order id) for consumers that filter on it.
func WithSubject(subject string) Option { return func(e *Envelope) { e.Subject = subject } }

// WithTime sets the event's time instead of now.
func WithTime(t time.Time) Option { return func(e *Envelope) { e.Time = t } }

// NewID returns a new random event id: a version 4 UUID (122 random bits
// from crypto/rand) in its canonical text form.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// Encode returns e in its wire form (see Envelope): a new random id unless
// WithID is given, the source DefaultSource unless WithSource is, the time
// now unless WithTime is, and e marshalled by encoding/json as the data.
// Use it to enqueue events yourself, for example in your own database
// transaction; a Dispatcher calls it for you.
//
// It fails, wrapping ErrInvalidEvent, for a nil event, an invalid type
// (EventType.Validate), an empty id or source, or data that does not
// marshal.
func Encode(e Event, opts ...Option) ([]byte, error) {
	env, err := newEnvelope(e, opts)
	if err != nil {
		return nil, err
	}
	return env.appendJSON(make([]byte, 0, 192+len(env.Data))), nil
}

// newEnvelope builds the envelope of e.
func newEnvelope(e Event, opts []Option) (*Envelope, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	t, err := eventType(e)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal %s (%T): %v", ErrInvalidEvent, t, e, err)
	}
	env := &Envelope{
		SpecVersion:     SpecVersion,
		ID:              NewID(),
		Source:          DefaultSource,
		Type:            t,
		Time:            time.Now().UTC(),
		DataContentType: ContentType,
		Data:            data,
	}
	for _, o := range opts {
		o(env)
	}
	switch {
	case env.ID == "":
		return nil, fmt.Errorf("%w: %s: empty id", ErrInvalidEvent, t)
	case env.Source == "":
		return nil, fmt.Errorf("%w: %s: empty source", ErrInvalidEvent, t)
	case env.Time.Year() < 0 || env.Time.Year() > 9999:
		return nil, fmt.Errorf("%w: %s: time %v is outside years 0-9999", ErrInvalidEvent, t, env.Time)
	}
	return env, nil
}

// eventType calls e.Type, turning a panic (a nil pointer with a value
// receiver) into an error.
func eventType(e Event) (t EventType, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = "", fmt.Errorf("%w: %T.Type() panicked: %v", ErrInvalidEvent, e, r)
		}
	}()
	t = e.Type()
	if err := t.Validate(); err != nil {
		return "", fmt.Errorf("%T: %w", e, err)
	}
	return t, nil
}

// Decode reads an event in its wire form. It checks the envelope, not the
// data: specversion "1.0", a non-empty id, source and type, a valid time if
// any, and JSON data (a datacontenttype, if given, that is JSON; no
// data_base64). Anything else wraps ErrMalformed with the reason.
func Decode(data []byte) (Envelope, error) {
	var raw struct {
		envelopeFields
		DataBase64 *string `json:"data_base64"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Envelope{}, malformed("not a JSON CloudEvent: %v", err)
	}
	env := Envelope(raw.envelopeFields)
	switch {
	case env.SpecVersion != SpecVersion:
		return Envelope{}, malformed("specversion %q, want %q", env.SpecVersion, SpecVersion)
	case env.ID == "":
		return Envelope{}, malformed("empty id")
	case env.Source == "":
		return Envelope{}, malformed("empty source")
	case raw.DataBase64 != nil:
		return Envelope{}, malformed("event %s: data_base64 is not supported, want JSON data", env.ID)
	case !isJSONContentType(env.DataContentType):
		return Envelope{}, malformed("event %s: datacontenttype %q is not JSON", env.ID, env.DataContentType)
	}
	if err := env.Type.Validate(); err != nil {
		return Envelope{}, malformed("event %s: %v", env.ID, err)
	}
	if bytes.Equal(env.Data, []byte("null")) {
		env.Data = nil
	}
	return env, nil
}

// isJSONContentType reports whether a datacontenttype means JSON data: empty
// (JSON by default in the structured format), application/json, text/json,
// or a +json type, with any parameters.
func isJSONContentType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// Metadata describes the event a listener is handling: its envelope's
// attributes and its delivery. Listeners get it with Meta.
type Metadata struct {
	// ID is the event's id, unique per dispatch and the same on every
	// redelivery: the key for idempotent listeners.
	ID      string
	Type    EventType
	Source  string
	Subject string
	Time    time.Time // when the event was dispatched (zero if unknown)

	Topic        string // the topic it was consumed from
	Subscription string // the subscription of Topic it was consumed from
	MessageID    string // the backend's id of the message
	Attempt      int    // 1 on the first delivery; 0 if the backend does not count
}

type metaKey struct{}

// Meta returns the metadata of the event being handled, from the ctx a
// Service passes to listeners and middleware. ok is false for any other ctx.
func Meta(ctx context.Context) (m Metadata, ok bool) {
	m, ok = ctx.Value(metaKey{}).(Metadata)
	return m, ok
}

// withMeta returns ctx carrying m.
func withMeta(ctx context.Context, m Metadata) context.Context {
	return context.WithValue(ctx, metaKey{}, m)
}
