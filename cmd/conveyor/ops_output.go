package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// Output: a table (aligned columns, one row per item) by default, one
// JSON document with --json. Data and errors are shown escaped in tables,
// so that a message cannot write to the terminal.

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, columns ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(toAny(columns)...)
	return t
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprint(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// previewLen is the most characters of a message's data a table shows.
const previewLen = 40

// preview shows the start of data, of size bytes in all, escaped and
// quoted as a Go string, "…" after it when there is more; "-" when empty.
func preview(data []byte, size int) string {
	if size == 0 {
		return "-"
	}
	cut, more := data, size > len(data)
	if utf8.Valid(data) || more && utf8.Valid(data[:len(data)-min(len(data), utf8.UTFMax-1)]) {
		// Text: cut after previewLen characters, and drop a character the
		// preview itself cut.
		if n := utf8.RuneCount(cut); n > previewLen {
			cut, more = []byte(string([]rune(string(cut))[:previewLen])), true
		}
		for len(cut) > 0 && !utf8.Valid(cut) {
			cut = cut[:len(cut)-1]
		}
	} else if len(cut) > previewLen {
		cut, more = cut[:previewLen], true
	}
	s := strconv.Quote(string(cut))
	if more {
		s += "…"
	}
	return s
}

// formatTime shows a time in UTC to the second; "-" when unknown.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

// The JSON documents.
type (
	jsonTopic struct {
		Name          string   `json:"name"`
		Subscriptions []string `json:"subscriptions"`
	}
	jsonStats struct {
		Topic              string  `json:"topic"`
		Subscription       string  `json:"subscription"`
		Ready              int64   `json:"ready"`
		Scheduled          int64   `json:"scheduled"`
		Processing         int64   `json:"processing"`
		Dead               int64   `json:"dead"`
		OldestReadySeconds float64 `json:"oldest_ready_seconds"`
	}
	jsonPage struct {
		Messages []jsonMessage `json:"messages"`
		Next     string        `json:"next,omitempty"`
	}
	// jsonMessage is a message: with its preview (peek) or its whole data
	// (show). Data is the data when it is UTF-8, DataBase64 when not.
	jsonMessage struct {
		ID         string            `json:"id"`
		State      string            `json:"state"`
		Attempts   int               `json:"attempts"`
		RunAt      *time.Time        `json:"run_at,omitempty"`
		CreatedAt  *time.Time        `json:"created_at,omitempty"`
		LastError  string            `json:"last_error,omitempty"`
		Size       int               `json:"size"`
		Header     map[string]string `json:"header,omitempty"`
		Truncated  bool              `json:"truncated,omitempty"` // Data is a preview
		Data       *string           `json:"data,omitempty"`
		DataBase64 []byte            `json:"data_base64,omitempty"`
	}
)

// newJSONMessage describes m, with data when given (else its preview).
func newJSONMessage(m admin.MessageInfo, data []byte) jsonMessage {
	out := jsonMessage{ID: m.ID, State: string(m.State), Attempts: m.Attempts, LastError: m.LastError, Size: m.Size, Header: m.Header}
	if !m.RunAt.IsZero() {
		at := m.RunAt.UTC()
		out.RunAt = &at
	}
	if !m.CreatedAt.IsZero() {
		at := m.CreatedAt.UTC()
		out.CreatedAt = &at
	}
	if data == nil {
		data, out.Truncated = m.Preview, len(m.Preview) < m.Size
	}
	if utf8.Valid(data) {
		s := string(data)
		out.Data = &s
	} else {
		out.DataBase64 = data
	}
	return out
}

// writeMessage prints a message whole, for show.
func writeMessage(w io.Writer, m admin.MessageInfo, data []byte) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(name string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", name, v) }
	field("ID", m.ID)
	field("State", m.State)
	field("Attempts", m.Attempts)
	field(strings.ToUpper(timeColumn(m.State)[:1])+strings.ToLower(timeColumn(m.State)[1:]), formatTime(m.RunAt))
	field("Created at", formatTime(m.CreatedAt))
	if m.LastError != "" {
		field("Last error", strconv.Quote(m.LastError))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Header)) {
		field("Header "+strconv.Quote(k), strconv.Quote(m.Header[k]))
	}
	field("Size", fmt.Sprintf("%d bytes", m.Size))
	tw.Flush()
	fmt.Fprintln(w, "Data:")
	var indented bytes.Buffer
	switch {
	case len(data) == 0:
		fmt.Fprintln(w, "(empty)")
	case json.Valid(data) && json.Indent(&indented, data, "", "  ") == nil:
		fmt.Fprintln(w, indented.String())
	case printable(data):
		fmt.Fprintln(w, strings.TrimSuffix(string(data), "\n"))
	default:
		fmt.Fprint(w, hex.Dump(data))
	}
}

// printable reports whether data is text a terminal shows as it is:
// UTF-8 of printable characters, newlines and tabs.
func printable(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}
