package event

import (
	"encoding/json"
	"strings"
	"testing"
)

// jsonSamples are valid and invalid JSON at the edges of the grammar.
var jsonSamples = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{ }`, `null`, `true`, `false`, `nul`, `truex`, `nullnull`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-05`, `-1.5e3`, `1.e3`, `+1`, `0x10`,
	`"a"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00e"`, `"\u00eg"`, `"\x"`, `"\/"`, "\"\x01\"", "\"\x7f\"",
	"\"\xff\xfe\"", `"é"`, "\"a\tb\"", `"a\tb"`,
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":{"b":[1,2,{"c":null}]}}`,
	`[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]]`, `[[[]]]`, `[[[]]`, "{\"a\":\n1\r\n}\t",
	`{"specversion":"1.0","id":"1","source":"s","type":"t","data":{"x":1}}`,
	`{} {}`, `1 2`, "\x00", "{\"a\":1}\x00",
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
	strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
}

func TestValidJSON(t *testing.T) {
	t.Parallel()
	for _, s := range jsonSamples {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.60q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// FuzzValidJSON checks that validJSON agrees with json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}
