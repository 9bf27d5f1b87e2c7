package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // of build-output events
	Test       string
	Elapsed    float64
	Output     string
}

// pkg is what is kept of a package while it runs.
type pkg struct {
	start  time.Time
	output []event         // every output event, in order, until the package ends
	done   map[string]bool // the tests that ended (pass or skip)
	failed map[string]bool // the tests that failed
	ran    map[string]bool // the tests that started
}

// formatter prints the short report of a stream of events.
type formatter struct {
	w       io.Writer
	now     func() time.Time
	begin   time.Time
	pkgs    map[string]*pkg
	order   []string // running packages, in the order they started
	ok, bad int
	noTests int
	failed  []string
}

func newFormatter(w io.Writer, now func() time.Time) *formatter {
	return &formatter{w: w, now: now, begin: now(), pkgs: map[string]*pkg{}}
}

// handle takes one input line and reports whether it printed anything.
func (f *formatter) handle(line []byte) bool {
	var e event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
		fmt.Fprintf(f.w, "%s\n", line)
		return true
	}
	if e.Action == "build-output" {
		fmt.Fprint(f.w, e.Output)
		return true
	}
	if e.Package == "" {
		return false
	}
	p := f.pkgs[e.Package]
	if p == nil {
		p = &pkg{start: e.Time, done: map[string]bool{}, failed: map[string]bool{}, ran: map[string]bool{}}
		if p.start.IsZero() {
			p.start = f.now()
		}
		f.pkgs[e.Package] = p
		f.order = append(f.order, e.Package)
	}
	switch {
	case e.Action == "output":
		p.output = append(p.output, e)
	case e.Test != "":
		switch e.Action {
		case "run":
			p.ran[e.Test] = true
		case "pass", "skip":
			p.done[e.Test] = true
		case "fail":
			p.failed[e.Test] = true
		}
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		f.end(e, p)
		return e.Action != "skip" || !f.noTestFiles(p)
	}
	return false
}

// noTestFiles reports whether p's output says it has no test files.
func (f *formatter) noTestFiles(p *pkg) bool {
	for _, e := range p.output {
		if strings.Contains(e.Output, "[no test files]") {
			return true
		}
	}
	return false
}

// end prints the line of a package that ended and, if it failed, the
// output of its failing and unfinished tests and its own output.
func (f *formatter) end(e event, p *pkg) {
	delete(f.pkgs, e.Package)
	f.order = slices.DeleteFunc(f.order, func(s string) bool { return s == e.Package })
	switch e.Action {
	case "pass":
		f.ok++
		fmt.Fprintf(f.w, "ok   %s %s\n", e.Package, seconds(e.Elapsed))
	case "skip":
		if f.noTestFiles(p) {
			f.noTests++
			return
		}
		f.ok++
		fmt.Fprintf(f.w, "ok   %s %s (no tests to run)\n", e.Package, seconds(e.Elapsed))
	case "fail":
		f.bad++
		f.failed = append(f.failed, e.Package)
		fmt.Fprintf(f.w, "FAIL %s %s\n", e.Package, seconds(e.Elapsed))
		for _, o := range p.output {
			if o.Test == "" || p.failed[o.Test] || (p.ran[o.Test] && !p.done[o.Test]) {
				fmt.Fprint(f.w, "    ", o.Output)
			}
		}
	}
}

// running prints the packages still running, the longest running first.
func (f *formatter) running() {
	if len(f.order) == 0 {
		return
	}
	const show = 4
	var names []string
	for i, name := range f.order {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(f.order)-show))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", name, f.now().Sub(f.pkgs[name].start).Round(time.Second)))
	}
	fmt.Fprintf(f.w, "     running: %s\n", strings.Join(names, ", "))
}

// summary prints the counts and the failed packages.
func (f *formatter) summary() {
	fmt.Fprintf(f.w, "packages: %d ok, %d failed, %d without tests (%s)\n",
		f.ok, f.bad, f.noTests, f.now().Sub(f.begin).Round(time.Second))
	if len(f.order) > 0 {
		fmt.Fprintf(f.w, "no result from: %s\n", strings.Join(f.order, ", "))
	}
	if len(f.failed) > 0 {
		fmt.Fprintf(f.w, "FAIL: %s\n", strings.Join(f.failed, " "))
	}
}

func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }
