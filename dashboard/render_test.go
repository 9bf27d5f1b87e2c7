package dashboard

import (
	"strings"
	"testing"
)

func TestFormatData(t *testing.T) {
	for _, c := range []struct {
		data, want, format string
	}{
		{`{"a":[1,2]}`, "{\n  \"a\": [\n    1,\n    2\n  ]\n}", formatJSON},
		{"line one\nline two\ttab", "line one\nline two\ttab", formatText},
		{"\x00\x01binary\xff", "00000000  00 01 62 69 6e 61 72 79  ff", formatHex},
		{"caf\xc3\xa9", "café", formatText},
	} {
		got, format := formatData([]byte(c.data))
		if format != c.format || !strings.HasPrefix(got, c.want) {
			t.Errorf("formatData(%q) = %q as %s, want %q as %s", c.data, got, format, c.want, c.format)
		}
	}
}

func TestPreview(t *testing.T) {
	for _, c := range []struct {
		data string
		size int
		want string
	}{
		{"short", 5, "short"},
		{"a\nb\tc", 5, "a b c"},
		{"\xffok", 3, `\xffok`},
		{"\x07bell", 5, `\u0007bell`},
		{"cut", 2000, "cut…"},
		{strings.Repeat("x", 130), 130, strings.Repeat("x", 120) + "…"},
	} {
		if got := preview([]byte(c.data), c.size); got != c.want {
			t.Errorf("preview(%q, %d) = %q, want %q", c.data, c.size, got, c.want)
		}
	}
}
