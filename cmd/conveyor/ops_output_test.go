package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

func TestPreview(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 50) // 100 bytes
	cases := []struct {
		name string
		data []byte
		size int // of the whole data
		want string
	}{
		{"Empty", nil, 0, "-"},
		{"Short", []byte(`{"a":1}`), 7, `"{\"a\":1}"`},
		{"Control", []byte("a\x1b[2Jb\n"), 7, `"a\x1b[2Jb\n"`},
		{"Long", []byte(long), 100, `"` + strings.Repeat("é", 40) + `"…`},
		{"PreviewOfMore", []byte("abc"), 5000, `"abc"…`},
		{"CutCharacter", []byte("ab\xc3"), 5000, `"ab"…`}, // the preview ended inside "é"
		{"Binary", bytes.Repeat([]byte{0xff, 0}, 30), 60, `"` + strings.Repeat(`\xff\x00`, 20) + `"…`},
	}
	for _, c := range cases {
		if got := preview(c.data, c.size); got != c.want {
			t.Errorf("%s: preview = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestWriteMessageData(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data []byte
		want string // what follows "Data:\n"
	}{
		{"JSON", []byte(`{"a":[1,2]}`), "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"},
		{"Text", []byte("two\nlines\n"), "two\nlines\n"},
		{"Empty", []byte{}, "(empty)\n"},
		{"Escape", []byte("a\x1b[2J"), "00000000  61 1b 5b 32 4a                                    |a.[2J|\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		writeMessage(&b, admin.MessageInfo{ID: "1", State: admin.StateReady, Size: len(c.data),
			Header: pubsub.Header{"trace": "x"}}, c.data)
		out := b.String()
		_, data, ok := strings.Cut(out, "Data:\n")
		if !ok || data != c.want {
			t.Errorf("%s: writeMessage wrote\n%s\nwant data\n%s", c.name, out, c.want)
		}
		if !strings.Contains(out, `Header "trace":  "x"`) {
			t.Errorf("%s: writeMessage does not show the header:\n%s", c.name, out)
		}
	}
}
