package event

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/pubsub"
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
// by a backend. Attribute names are case-sensitive, as the specification
// says: Decode reads "id", never "ID", and keeps every other attribute (an
// extension such as traceparent) in Extensions, which MarshalJSON writes
// back.
//
// The struct tags document the wire names; MarshalJSON and UnmarshalJSON
// (Decode) read and write the wire form themselves.
type Envelope struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"` // a URI-reference (RFC 3986)
	Type            EventType `json:"type"`
	Subject         string    `json:"subject,omitempty"`
	Time            time.Time `json:"time,omitzero"`
	DataContentType string    `json:"datacontenttype,omitempty"`
	DataSchema      string    `json:"dataschema,omitempty"` // an absolute URI
	// Data is the event's data, a JSON value: nil when the event has
	// none, the JSON null when it has an explicit "data": null. Decode
	// puts the bytes of a data_base64 here too, when they are JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// Extensions holds the extension attributes, by name (lower-case
	// ASCII letters and digits), each a JSON string, number or boolean.
	Extensions map[string]json.RawMessage `json:"-"`
}

// MarshalJSON returns e in the wire form, as Encode writes it, with its
// extensions in the order of their names. It fails, wrapping
// ErrInvalidEvent, for an envelope that is not a valid event (see
// Envelope.Validate).
func (e Envelope) MarshalJSON() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	var data bytes.Buffer
	if len(e.Data) > 0 {
		if err := json.Compact(&data, e.Data); err != nil {
			return nil, err
		}
		e.Data = data.Bytes()
	}
	return e.appendJSON(make([]byte, 0, e.encodedLen()), nil), nil
}

// UnmarshalJSON reads e from the wire form, as Decode does.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	env, err := Decode(b)
	if err != nil {
		return err
	}
	*e = env
	return nil
}

// Validate reports whether e is a CloudEvents 1.0 event that MarshalJSON
// can write: specversion "1.0", a non-empty id, a source that is a
// URI-reference, a valid type (EventType.Validate), a time in years
// 0-9999 if any, a JSON datacontenttype if any, a dataschema that is an
// absolute URI if any, JSON data, and extensions with valid names
// (lower-case ASCII letters and digits, not a CloudEvents attribute's)
// whose values are JSON strings, numbers or booleans. The error wraps
// ErrInvalidEvent and names what is wrong.
func (e *Envelope) Validate() error {
	if err := e.Type.Validate(); err != nil {
		if e.ID == "" {
			return err
		}
		return fmt.Errorf("event %q: %w", e.ID, err)
	}
	if err := e.checkData(true); err != nil {
		return e.invalid(err)
	}
	return nil
}

// invalid wraps ErrInvalidEvent around err, what makes e invalid.
func (e *Envelope) invalid(err error) error {
	if e.ID == "" {
		return fmt.Errorf("%w: %s: %v", ErrInvalidEvent, e.Type, err)
	}
	return fmt.Errorf("%w: %s %q: %v", ErrInvalidEvent, e.Type, e.ID, err)
}

// checkData reports what makes e not a valid event, but its type; it
// checks that e.Data is JSON only if data.
func (e *Envelope) checkData(data bool) error {
	switch {
	case e.SpecVersion != SpecVersion:
		return fmt.Errorf("specversion %q, want %q", e.SpecVersion, SpecVersion)
	case e.ID == "":
		return errors.New("empty id")
	case e.Source == "":
		return errors.New("empty source")
	case e.Time.Year() < 0 || e.Time.Year() > 9999:
		return fmt.Errorf("time %v is outside years 0-9999", e.Time)
	case !isJSONContentType(e.DataContentType):
		return fmt.Errorf("datacontenttype %q is not JSON", e.DataContentType)
	case data && len(e.Data) > 0 && !validJSON(e.Data):
		return errors.New("data is not valid JSON")
	}
	if err := checkURIRef(e.Source); err != nil {
		return fmt.Errorf("source %v", err)
	}
	if e.DataSchema != "" {
		if err := checkURI(e.DataSchema); err != nil {
			return fmt.Errorf("dataschema %v", err)
		}
	}
	for name, v := range e.Extensions {
		if err := checkExtension(name, v); err != nil {
			return err
		}
	}
	return nil
}

// appendJSON appends the wire form of e to b. e must be valid (check), and
// e.Data compact JSON or empty. A non-nil newID, a NewID's text, is the id
// written instead of e.ID.
func (e *Envelope) appendJSON(b, newID []byte) []byte {
	b = append(b, `{"specversion":`...)
	b = appendString(b, e.SpecVersion)
	b = append(b, `,"id":`...)
	if newID != nil {
		b = append(b, '"')
		b = append(b, newID...) // hex digits and dashes: nothing to escape
		b = append(b, '"')
	} else {
		b = appendString(b, e.ID)
	}
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
	if e.DataSchema != "" {
		b = append(b, `,"dataschema":`...)
		b = appendString(b, e.DataSchema)
	}
	if len(e.Extensions) > 0 {
		names := make([]string, 0, len(e.Extensions))
		for name := range e.Extensions {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			b = append(b, ',', '"')
			b = append(b, name...) // a-z0-9: nothing to escape
			b = append(b, '"', ':')
			b = append(b, e.Extensions[name]...)
		}
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// encodedLen is the length of the wire form of e when none of its strings
// needs escaping: enough for appendJSON to allocate once, and no more.
func (e *Envelope) encodedLen() int {
	n := len(`{"specversion":"","id":"","source":"","type":""}`) +
		len(e.SpecVersion) + len(e.ID) + len(e.Source) + len(e.Type)
	if e.Subject != "" {
		n += len(`,"subject":""`) + len(e.Subject)
	}
	if !e.Time.IsZero() {
		n += len(`,"time":""`) + len(time.RFC3339Nano) // the layout is as long as the longest time
	}
	if e.DataContentType != "" {
		n += len(`,"datacontenttype":""`) + len(e.DataContentType)
	}
	if e.DataSchema != "" {
		n += len(`,"dataschema":""`) + len(e.DataSchema)
	}
	for name, v := range e.Extensions {
		n += len(`,"":`) + len(name) + len(v)
	}
	if len(e.Data) > 0 {
		n += len(`,"data":`) + len(e.Data)
	}
	return n
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

// WithSource sets the event's source: a URI-reference (RFC 3986) naming
// the producer, such as "/orders-service" or "urn:example:orders". Encode
// and the Dispatcher refuse one that is not, with ErrInvalidEvent.
func WithSource(source string) Option { return func(e *Envelope) { e.Source = source } }

// WithSubject sets the event's subject (what the event is about, such as
// an order id) for consumers that filter on it.
func WithSubject(subject string) Option { return func(e *Envelope) { e.Subject = subject } }

// WithTime sets the event's time instead of now.
func WithTime(t time.Time) Option { return func(e *Envelope) { e.Time = t } }

// WithExtension sets the extension attribute name to the string value,
// such as a tenant or a correlation id. A name that is not lower-case
// ASCII letters and digits, or that is a CloudEvents attribute's, makes
// the event invalid (ErrInvalidEvent). A Dispatcher also writes, as
// extensions, the entries of the dispatch ctx's header
// (pubsub.WithHeader) whose keys can name one: traceparent and tracestate
// put there by a tracing wrapper reach every reader of the event.
func WithExtension(name, value string) Option {
	return func(e *Envelope) { e.setExtension(name, value) }
}

// withHeader sets, as string extensions, the entries of h whose keys can
// name an extension; the others stay in the backend's header only.
func withHeader(h pubsub.Header) Option {
	return func(e *Envelope) {
		for k, v := range h {
			if checkExtensionName(k) == nil {
				e.setExtension(k, v)
			}
		}
	}
}

func (e *Envelope) setExtension(name, value string) {
	if e.Extensions == nil {
		e.Extensions = make(map[string]json.RawMessage, 2)
	}
	e.Extensions[name] = appendString(nil, value)
}

// Extension returns the extension attribute name as a string: its value
// when it is a JSON string, else its JSON text; ok is false when the event
// has no such attribute.
func (m Metadata) Extension(name string) (value string, ok bool) {
	v, ok := m.Extensions[name]
	if !ok {
		return "", false
	}
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str, true
	}
	return string(v), true
}

// NewID returns a new random event id: a version 4 UUID (122 random bits
// from crypto/rand) in its canonical text form.
func NewID() string {
	var s [36]byte
	newID(&s)
	return string(s[:])
}

// newID writes a new random event id (see NewID) into s.
func newID(s *[36]byte) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	formatID(s, &b)
}

// formatID writes the version 4 UUID of the 16 random bytes b into s.
func formatID(s *[36]byte, b *[16]byte) {
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
}

// Encode returns e in its wire form (see Envelope): a new random id unless
// WithID is given, the source DefaultSource unless WithSource is, the time
// now unless WithTime is, and e marshalled by encoding/json as the data.
// Use it to enqueue events yourself, for example in your own database
// transaction; a Dispatcher calls it for you.
//
// It fails, wrapping ErrInvalidEvent, for a nil event, an invalid type
// (EventType.Validate), data that does not marshal, or options that make
// the envelope invalid (Envelope.Validate): an empty id, a source that is
// not a URI-reference, a time outside years 0-9999...
func Encode(e Event, opts ...Option) ([]byte, error) {
	return encode(e, DefaultSource, opts)
}

// encode is Encode with source instead of DefaultSource: a URI-reference
// (checkURIRef), which options may replace.
func encode(e Event, source string, opts []Option) ([]byte, error) {
	mb := marshalBufs.Get().(*marshalBuf)
	defer mb.release()
	var env Envelope // on the stack: newEnvelope applies the options to a copy
	var id [36]byte
	newID, err := newEnvelope(&env, e, source, opts, mb, &id)
	if err != nil {
		return nil, err
	}
	return env.appendJSON(make([]byte, 0, env.encodedLen()+len(newID)), newID), nil
}

// marshalBuf marshals event data into a buffer reused from one encode to
// the next (see marshalBufs): encoding/json's Encoder writes what Marshal
// returns, followed by a newline.
type marshalBuf struct {
	buf bytes.Buffer
	enc *json.Encoder

	// rnd holds crypto/rand bytes for the ids of the events it encodes,
	// read 16 ids at a time: on the 2-core test machine, a crypto/rand
	// read of 16 bytes took 170-220 ns, one of 256 bytes 0.9-1.1 µs, a
	// fifth of the cost per id. Each byte goes into one id only, and is
	// cleared once it has.
	rnd   [256]byte
	avail int // rnd[len(rnd)-avail:] are not used yet
}

// newID writes a new random event id (see NewID) into s, from mb.rnd.
func (mb *marshalBuf) newID(s *[36]byte) {
	if mb.avail < 16 {
		_, _ = rand.Read(mb.rnd[:]) // never fails (crypto/rand, Go 1.24+)
		mb.avail = len(mb.rnd)
	}
	next := mb.rnd[len(mb.rnd)-mb.avail:][:16]
	b := [16]byte(next)
	clear(next)
	mb.avail -= 16
	formatID(s, &b)
}

// maxPooledMarshalBuf is the largest buffer put back in marshalBufs: a rare
// large event does not keep its buffer alive for the small ones.
const maxPooledMarshalBuf = 64 << 10

// marshalBufs holds the marshalBufs not in use.
var marshalBufs = sync.Pool{New: func() any {
	mb := new(marshalBuf)
	mb.enc = json.NewEncoder(&mb.buf)
	return mb
}}

// marshal returns v as json.Marshal does, in mb's buffer: valid until mb
// marshals again or is released.
func (mb *marshalBuf) marshal(v any) ([]byte, error) {
	mb.buf.Reset()
	if err := mb.enc.Encode(v); err != nil {
		return nil, err
	}
	b := mb.buf.Bytes()
	return b[:len(b)-1], nil // without Encode's newline
}

// release puts mb back in marshalBufs.
func (mb *marshalBuf) release() {
	if mb.buf.Cap() > maxPooledMarshalBuf {
		return
	}
	marshalBufs.Put(mb)
}

// newEnvelope sets *env to the envelope of e from source, a URI-reference,
// marshalling e's data with mb. Without options, env.Data is mb's buffer
// and env.ID is empty: the id is written in *id and returned, to be
// written in the JSON in env.ID's place (see appendJSON). With options,
// which get the envelope and may keep what it holds, env.Data is a copy
// and env.ID the id, and newEnvelope returns nil for the id.
func newEnvelope(env *Envelope, e Event, source string, opts []Option, mb *marshalBuf, id *[36]byte) ([]byte, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	t, err := eventType(e)
	if err != nil {
		return nil, err
	}
	data, err := mb.marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal %s (%T): %v", ErrInvalidEvent, t, e, err)
	}
	mb.newID(id)
	*env = Envelope{
		SpecVersion:     SpecVersion,
		Source:          source,
		Type:            t,
		Time:            time.Now().UTC(),
		DataContentType: ContentType,
		Data:            data,
	}
	if len(opts) == 0 {
		return id[:], nil // valid: its type was checked, its source is one, the rest is ours
	}
	data = bytes.Clone(data)
	env.Data, env.ID = data, string(id[:])
	*env = withOptions(*env, opts)
	if err := env.Type.Validate(); err != nil {
		return nil, fmt.Errorf("event %q: %w", env.ID, err)
	}
	// json.Marshal returns valid JSON: the data is checked again only if
	// an option replaced it.
	marshalled := len(env.Data) == len(data) && (len(data) == 0 || &env.Data[0] == &data[0])
	if err := env.checkData(!marshalled); err != nil {
		return nil, env.invalid(err)
	}
	return nil, nil
}

// withOptions returns env with opts applied. The options get a copy of
// their own, which escapes to the heap, so that env need not.
func withOptions(env Envelope, opts []Option) Envelope {
	p := new(Envelope)
	*p = env
	for _, o := range opts {
		o(p)
	}
	return *p
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
	// LastAttempt: the delivery is the message's last attempt under its
	// topic's retry policy, so a failure makes it dead (false when the
	// backend does not count attempts or say its policy).
	LastAttempt bool

	// Extensions are the event's extension attributes as on the wire
	// (see Envelope.Extensions and Extension), such as traceparent; nil
	// if it has none. Listeners must not modify it.
	Extensions map[string]json.RawMessage
}

type metaKey struct{}

// Meta returns the metadata of the event being handled, from the ctx a
// Service passes to listeners and middleware. ok is false for any other ctx.
func Meta(ctx context.Context) (m Metadata, ok bool) {
	p, ok := ctx.Value(metaKey{}).(*Metadata)
	if !ok {
		return Metadata{}, false
	}
	return *p, true
}

// withMeta returns ctx carrying m.
func withMeta(ctx context.Context, m Metadata) *metaCtx {
	return &metaCtx{Context: ctx, md: m}
}

// metaCtx is a context carrying a delivery's metadata: what
// context.WithValue does, in one allocation instead of two (the Metadata
// boxed, and the context). It holds the claim scope of the delivery's
// first listener too (see Service.callListener), in the same allocation.
type metaCtx struct {
	context.Context
	md Metadata

	first claimScope // in use once first.svc is set, under first.mu
}

// metaCtxKey is the key under which a metaCtx holds itself.
type metaCtxKey struct{}

func (c *metaCtx) Value(key any) any {
	switch key.(type) {
	case metaKey:
		return &c.md // Meta copies it: nobody can change it
	case metaCtxKey:
		return c
	}
	return c.Context.Value(key)
}

// claimScope returns a new claim scope of l on the delivery of ctx, a
// context derived from c: c's own the first time, a new one after (a
// second listener, or middleware calling its next twice).
func (c *metaCtx) claimScope(ctx context.Context, s *Service, l *listener, eventID string) *claimScope {
	sc := &c.first
	sc.mu.Lock()
	taken := sc.svc != nil
	if !taken {
		sc.Context, sc.svc, sc.l, sc.eventID = ctx, s, l, eventID
	}
	sc.mu.Unlock()
	if taken {
		return &claimScope{Context: ctx, svc: s, l: l, eventID: eventID}
	}
	return sc
}

func (c *metaCtx) String() string {
	return fmt.Sprintf("%v.WithValue(event.metaKey, %s)", c.Context, c.md.ID)
}
