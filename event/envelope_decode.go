package event

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Decode reads an event in its wire form, the structured JSON format of
// CloudEvents 1.0. It checks the envelope, not the data: a JSON object
// whose member names are all distinct; specversion "1.0", a non-empty id
// and type, a source that is a URI-reference, a valid time and an
// absolute dataschema if any; data that is JSON (a datacontenttype, if
// given, that is JSON), given as data or as data_base64 (decoded, its bytes
// must then be JSON), not both. Names are case-sensitive: "ID" is not
// "id". Every other member is an extension attribute, kept in Extensions:
// its name must be lower-case ASCII letters and digits, its value a JSON
// string, number or boolean (null means absent, as for every attribute).
// Anything else wraps ErrMalformed with the reason.
func Decode(data []byte) (Envelope, error) {
	env, _, err := decode(data, nil)
	return env, err
}

// decode is Decode that also returns extra as a string, made in the same
// allocation as the envelope's string attributes (a Service's message id).
func decode(data, extra []byte) (Envelope, string, error) {
	var env Envelope
	var strs [numStrings][]byte // the string attributes' values, unquoted, then extra
	var dataBase64 []byte
	var seen uint16                 // the attributes met, a bit each
	var seenExt map[string]struct{} // the other members met, made for the first
	var extErr error                // the first bad extension, reported with specversion: JSON of another kind is told as such first
	err := members(data, func(name, v []byte, plain bool) error {
		a := attrIndex(name)
		if a < 0 {
			n := string(name)
			if _, dup := seenExt[n]; dup {
				return malformed("member %q appears more than once", n)
			}
			if seenExt == nil {
				seenExt = make(map[string]struct{})
			}
			seenExt[n] = struct{}{}
			return extension(&env, n, v, &extErr)
		}
		if seen&(1<<a) != 0 {
			return malformed("member %q appears more than once", name)
		}
		seen |= 1 << a
		if a == attrData {
			env.Data = bytes.Clone(v) // "null" included: an explicit null is not absent data
			return nil
		}
		s, ok, err := stringMember(name, v, plain)
		if err != nil || !ok { // !ok: null, absent
			return err
		}
		switch a {
		case attrTime:
			if err := env.Time.UnmarshalText(s); err != nil {
				return malformed("time %q is not an RFC 3339 timestamp", s)
			}
		case attrDataBase64:
			dataBase64 = s
		default:
			strs[a] = s
		}
		return nil
	})
	if err != nil {
		return Envelope{}, "", err
	}
	strs[strExtra] = extra
	extraStr := setStrings(&env, &strs)

	switch {
	case env.SpecVersion != SpecVersion && extErr != nil:
		return Envelope{}, "", malformed("specversion %q, want %q; and %v", env.SpecVersion, SpecVersion, extErr)
	case env.SpecVersion != SpecVersion:
		return Envelope{}, "", malformed("specversion %q, want %q", env.SpecVersion, SpecVersion)
	case extErr != nil:
		return Envelope{}, "", malformed("%v", extErr)
	case env.ID == "":
		return Envelope{}, "", malformed("empty id")
	case env.Source == "":
		return Envelope{}, "", malformed("event %s: empty source", env.ID)
	case !isJSONContentType(env.DataContentType):
		return Envelope{}, "", malformed("event %s: datacontenttype %q is not JSON", env.ID, env.DataContentType)
	}
	if err := env.Type.Validate(); err != nil {
		return Envelope{}, "", malformed("event %s: %v", env.ID, err)
	}
	if err := checkURIRef(env.Source); err != nil {
		return Envelope{}, "", malformed("event %s: source %v", env.ID, err)
	}
	if env.DataSchema != "" {
		if err := checkURI(env.DataSchema); err != nil {
			return Envelope{}, "", malformed("event %s: dataschema %v", env.ID, err)
		}
	}
	if dataBase64 != nil {
		if env.Data != nil {
			return Envelope{}, "", malformed("event %s: both data and data_base64", env.ID)
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(dataBase64)))
		n, err := base64.StdEncoding.Decode(b, dataBase64)
		if err != nil {
			return Envelope{}, "", malformed("event %s: data_base64 is not base64: %v", env.ID, err)
		}
		if b = b[:n]; len(b) > 0 { // no bytes: no data
			if !validJSON(b) {
				return Envelope{}, "", malformed("event %s: data_base64 does not hold JSON, as datacontenttype %q says it must", env.ID, env.DataContentType)
			}
			env.Data = b
		}
	}
	return env, extraStr, nil
}

// The members of the JSON format that Decode reads itself, by their bit
// in its set of members met. The string attributes come first.
const (
	attrSpecVersion = iota
	attrID
	attrSource
	attrType
	attrSubject
	attrDataContentType
	attrDataSchema
	attrTime
	attrData
	attrDataBase64
)

// The strings setStrings makes: the string attributes, then decode's extra.
const (
	strExtra   = attrDataSchema + 1
	numStrings = strExtra + 1
)

// attrIndex returns the index of the member name among those Decode reads
// itself, -1 for an extension.
func attrIndex(name []byte) int {
	switch string(name) {
	case "specversion":
		return attrSpecVersion
	case "id":
		return attrID
	case "source":
		return attrSource
	case "type":
		return attrType
	case "subject":
		return attrSubject
	case "datacontenttype":
		return attrDataContentType
	case "dataschema":
		return attrDataSchema
	case "time":
		return attrTime
	case "data":
		return attrData
	case "data_base64":
		return attrDataBase64
	}
	return -1
}

// setStrings sets the string attributes of env from their unquoted
// values, all held by one new string, and returns strs[strExtra] as a
// string too, from the same one.
func setStrings(env *Envelope, strs *[numStrings][]byte) string {
	var sb strings.Builder
	n := 0
	for _, s := range strs {
		n += len(s)
	}
	sb.Grow(n)
	var ends [len(strs)]int
	for i, s := range strs {
		sb.Write(s)
		ends[i] = sb.Len()
	}
	all := sb.String()
	field := func(i int) string {
		if i == 0 {
			return all[:ends[0]]
		}
		return all[ends[i-1]:ends[i]]
	}
	env.SpecVersion = field(attrSpecVersion)
	env.ID = field(attrID)
	env.Source = field(attrSource)
	env.Type = EventType(field(attrType))
	env.Subject = field(attrSubject)
	env.DataContentType = field(attrDataContentType)
	env.DataSchema = field(attrDataSchema)
	return field(strExtra)
}

// extension reads the member name of value v, which is no CloudEvents
// attribute of the JSON format, into env.Extensions; a bad one is kept in
// *extErr, unless one was before.
func extension(env *Envelope, name string, v []byte, extErr *error) error {
	if err := checkExtensionName(name); err != nil {
		*extErr = cmp.Or(*extErr, err)
		return nil
	}
	if string(v) == "null" {
		return nil // absent
	}
	if err := checkExtensionValue(name, v); err != nil {
		*extErr = cmp.Or(*extErr, err)
		return nil
	}
	if env.Extensions == nil {
		env.Extensions = make(map[string]json.RawMessage)
	}
	env.Extensions[name] = bytes.Clone(v)
	return nil
}

// isAttribute reports whether name is a CloudEvents 1.0 context attribute
// of the JSON format that this package reads itself (data aside).
func isAttribute(name string) bool {
	switch name {
	case "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema":
		return true
	}
	return false
}

// stringMember returns the string value v of the member name, unquoted,
// ok false for null. v is valid JSON; plain says it is a string of ASCII
// without escapes (see members), its bytes between the quotes its value.
func stringMember(name, v []byte, plain bool) (s []byte, ok bool, err error) {
	if string(v) == "null" {
		return nil, false, nil
	}
	if v[0] != '"' {
		return nil, false, malformed("%s is %s, want a string", name, describeJSON(v))
	}
	if plain {
		return v[1 : len(v)-1], true, nil
	}
	return unquote(v), true, nil
}

// unquote returns the JSON string v (valid JSON) as encoding/json reads
// it: the bytes between its quotes when they hold no escape and are valid
// UTF-8, else new bytes.
func unquote(v []byte) []byte {
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return in
	}
	var s string
	_ = json.Unmarshal(v, &s) // cannot fail: v is a valid JSON string
	return []byte(s)
}

// members calls f with the name (unquoted, see unquote) and the value of
// each member of the JSON object in b, in order, until f returns an error;
// plain says that the value is a string of ASCII without escapes (see
// scanString), whose bytes between the quotes are its value.
// It reads b once and validates all of it, as json.Valid does: when b is
// not JSON, the error (wrapping ErrMalformed) says so as encoding/json
// describes it, even if f failed on a member before; when b is JSON but
// not an object, it says that; else it is f's error.
func members(b []byte, f func(name, v []byte, plain bool) error) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if !validJSON(b) {
			return notJSON(b)
		}
		return malformed("not a JSON CloudEvent: %s, want an object", describeJSON(b[i:]))
	}
	var ferr error
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return tail(b, i+1, nil)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return notJSON(b)
		}
		end, plain, ok := scanString(b, i)
		if !ok {
			return notJSON(b)
		}
		name := b[i+1 : end-1]
		if !plain {
			name = unquote(b[i:end])
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ':' {
			return notJSON(b)
		}
		i = skipSpace(b, i+1)
		plain = false
		if i < len(b) && b[i] == '"' { // a string: scanned once, for its end and whether it is plain
			end, plain, ok = scanString(b, i)
		} else {
			end, ok = validValue(b, i, 1)
		}
		if !ok {
			return notJSON(b)
		}
		if ferr == nil {
			ferr = f(name, b[i:end], plain)
		}
		if i = skipSpace(b, end); i >= len(b) {
			return notJSON(b)
		}
		switch b[i] {
		case '}':
			return tail(b, i+1, ferr)
		case ',':
			i = skipSpace(b, i+1)
		default:
			return notJSON(b)
		}
	}
}

// tail returns err if b ends with white space from i, else the error
// saying that b is not JSON.
func tail(b []byte, i int, err error) error {
	if skipSpace(b, i) != len(b) {
		return notJSON(b)
	}
	return err
}

// notJSON is the error of an event that is not JSON, b.
func notJSON(b []byte) error {
	var v json.RawMessage // for encoding/json's description of the error
	err := json.Unmarshal(b, &v)
	return malformed("not a JSON CloudEvent: %v", err)
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// checkExtensionName reports whether name can name an extension
// attribute: 1 or more lower-case ASCII letters or digits, as CloudEvents
// 1.0 requires of attribute names, and not a CloudEvents attribute's name.
// So "ID" or "Data" is refused, never read as "id" or "data".
func checkExtensionName(name string) error {
	if name == "" {
		return errors.New("member with an empty name: want an attribute name of lower-case letters and digits")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Errorf("member %q is not a CloudEvents attribute: names are lower-case ASCII letters and digits, and case-sensitive", name)
		}
	}
	if isAttribute(name) || name == "data" {
		return fmt.Errorf("extension %q has the name of a CloudEvents attribute", name)
	}
	return nil
}

// checkExtension reports whether an extension attribute is valid: its
// name (checkExtensionName) and its value, a JSON string, number or
// boolean.
func checkExtension(name string, v json.RawMessage) error {
	if err := checkExtensionName(name); err != nil {
		return err
	}
	return checkExtensionValue(name, v)
}

// checkExtensionValue reports whether v is a JSON string, number or
// boolean, as CloudEvents types are in the JSON format.
func checkExtensionValue(name string, v json.RawMessage) error {
	if !json.Valid(v) {
		return fmt.Errorf("extension %q: value is not valid JSON", name)
	}
	switch c := bytes.TrimLeft(v, " \t\r\n")[0]; {
	case c == '"', c == 't', c == 'f', c == '-', c >= '0' && c <= '9':
		return nil
	}
	return fmt.Errorf("extension %q is %s, want a string, number or boolean", name, describeJSON(v))
}

// checkURIRef reports why s is not a URI-reference (RFC 3986, section
// 4.1): a character that a URI cannot hold, a % not followed by two hex
// digits, brackets outside an IP literal host, or what net/url refuses.
func checkURIRef(s string) error {
	plain := true // no character with a meaning to net/url: % : ? # [ ]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~/@!$&'()*+,;=", c) >= 0:
		case c == '%':
			plain = false
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Errorf("%q is not a URI-reference: %% not followed by two hex digits", s)
			}
			i += 2
		case strings.IndexByte(":?#[]", c) >= 0:
			plain = false
		default:
			return fmt.Errorf("%q is not a URI-reference: character %q must be percent-encoded", s, rune(c))
		}
	}
	if plain && !strings.HasPrefix(s, "//") {
		return nil // a relative path, such as "conveyor" or "/orders": no scheme, no authority, nothing to unescape
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a URI-reference: %v", s, err)
	}
	if strings.Count(s, "#") > 1 {
		return fmt.Errorf("%q is not a URI-reference: more than one #", s)
	}
	if n := strings.Count(s, "[") + strings.Count(s, "]"); n > 0 &&
		(n != 2 || !strings.HasPrefix(u.Host, "[") || !strings.Contains(u.Host, "]")) {
		return fmt.Errorf("%q is not a URI-reference: [ and ] only enclose an IP literal host", s)
	}
	return nil
}

// checkURI reports why s is not an absolute URI (RFC 3986, section 4.3).
func checkURI(s string) error {
	if err := checkURIRef(s); err != nil {
		return err
	}
	if u, _ := url.Parse(s); !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URI: no scheme", s)
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isJSONContentType reports whether a datacontenttype means JSON data: empty
// (JSON by default in the structured format), application/json, text/json,
// or a +json type, with any parameters.
func isJSONContentType(ct string) bool {
	if ct == "" || ct == ContentType {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// describeJSON names the kind of the JSON value v for an error message.
func describeJSON(v json.RawMessage) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
