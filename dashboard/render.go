package dashboard

import (
	"bytes"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/internal/timefmt"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the parsed pages, each the layout with its own "content".
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{"age": timefmt.Age}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	m := map[string]*template.Template{}
	for _, name := range []string{"overview", "messages", "message", "confirm", "error"} {
		m[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return m
}()

// staticFiles serves the embedded style sheet.
func staticFiles() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree has the folder: cannot happen
	}
	return http.FileServerFS(sub)
}

// page is what every page's template gets.
type page struct {
	Base     string // Options.Prefix
	Title    string
	Crumbs   []link
	ReadOnly bool
	Flash    string
	Refresh  int    // seconds between reloads, 0 for none
	CSRF     string // the forms' token
	Data     any    // the page's own
}

// link is a named URL: a breadcrumb, a tab, an action.
type link struct {
	Name    string
	URL     string
	Count   int64 // tabs: the count of the state, -1 when unknown
	Current bool
}

// render writes the page name with status code.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Base, p.ReadOnly = d.opts.Prefix, d.opts.ReadOnly
	if name == "confirm" {
		p.CSRF = d.csrf.token(w, r)
	}
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		d.log.ErrorContext(r.Context(), "dashboard: page not rendered", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes()) // the client went away: nothing to do
}

// fail answers the error page with code and msg.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	d.render(w, r, code, "error", page{Title: http.StatusText(code),
		Data: struct{ Status, Message string }{fmt.Sprintf("%d %s", code, http.StatusText(code)), msg}})
}

// formatTime writes t in UTC to the second, and how far it is from now.
func formatTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := t.UTC().Format("2006-01-02 15:04:05 UTC")
	switch d := t.Sub(now); {
	case d > time.Second:
		return s + " (in " + timefmt.Age(d) + ")"
	case d < -time.Second:
		return s + " (" + timefmt.Age(-d) + " ago)"
	}
	return s + " (now)"
}

// Data formats of the message page.
const (
	formatJSON = "JSON"
	formatText = "text"
	formatHex  = "binary, in hex"
)

// formatData returns data as the message page shows it: indented JSON when
// it is JSON, else the text when it is printable UTF-8, else a hex dump;
// and its format. The template escapes the result.
func formatData(data []byte) (string, string) {
	if json.Valid(data) {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			return buf.String(), formatJSON
		}
	}
	if printable(data) {
		return string(data), formatText
	}
	return hex.Dump(data), formatHex
}

// preview returns a message's data preview as one line of text: its
// printable UTF-8, with other bytes as \xNN, cut at 120 runes.
func preview(data []byte, size int) string {
	var b strings.Builder
	n, total := 0, len(data)
	for len(data) > 0 && n < 120 {
		r, w := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && w <= 1:
			fmt.Fprintf(&b, `\x%02x`, data[0])
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		data = data[w:]
		n++
	}
	if size > total-len(data) {
		b.WriteString("…")
	}
	return b.String()
}

// printable reports whether data is UTF-8 text without control characters
// but line breaks and tabs.
func printable(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}
