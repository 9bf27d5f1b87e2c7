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
	// FailedBuild is set on the fail event of a package whose test
	// binary did not build.
	FailedBuild string
}

// pkg is what is kept of a package while it runs.
type pkg struct {
	start   time.Time
	output  []event         // every output event, in order, until the package ends
	done    map[string]bool // the tests that ended (pass or skip)
	failed  map[string]bool // the tests that failed
	ran     map[string]bool // the tests that started
	started []string        // the tests that started, in order
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
	failed  []string // a line per failed package: its name and why it failed
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
			if !p.ran[e.Test] {
				p.started = append(p.started, e.Test)
			}
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
		f.failed = append(f.failed, e.Package+" "+p.why(e))
		fmt.Fprintf(f.w, "FAIL %s %s\n", e.Package, seconds(e.Elapsed))
		for _, o := range p.output {
			if o.Test == "" || p.failed[o.Test] || (p.ran[o.Test] && !p.done[o.Test]) {
				fmt.Fprint(f.w, "    ", o.Output)
			}
		}
	}
}

// why names what made p fail, as its fail event e ends it: the failed
// tests that have no failed subtest and the tests that never ended (a
// panic or a timeout stops the binary while they run), each without its
// running parents; or, when no test failed, that its build failed or that
// it failed outside any test (TestMain, such as its goleak check, or the
// binary's exit).
func (p *pkg) why(e event) string {
	failed := func(name string) bool { return p.failed[name] }
	unfinished := func(name string) bool { return !p.done[name] && !p.failed[name] }
	var names []string
	for _, kind := range []struct {
		is     func(string) bool
		suffix string
	}{{failed, ""}, {unfinished, " (did not finish)"}} {
		for _, name := range p.started {
			if kind.is(name) && !p.hasSubtest(name, kind.is) {
				names = append(names, name+kind.suffix)
			}
		}
	}
	switch {
	case len(names) > 0:
		return strings.Join(names, ", ")
	case e.FailedBuild != "":
		return "(build failed)"
	default:
		return "(no test failed: its output above says why, from TestMain or the test binary's exit)"
	}
}

// hasSubtest reports whether a subtest of name, at any depth, started and
// is.
func (p *pkg) hasSubtest(name string, is func(string) bool) bool {
	for _, sub := range p.started {
		if strings.HasPrefix(sub, name+"/") && is(sub) {
			return true
		}
	}
	return false
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

// summary prints the counts and a line per failed package naming its
// failed tests, last: a report cut to its tail still says what failed.
func (f *formatter) summary() {
	fmt.Fprintf(f.w, "packages: %d ok, %d failed, %d without tests (%s)\n",
		f.ok, f.bad, f.noTests, f.now().Sub(f.begin).Round(time.Second))
	if len(f.order) > 0 {
		fmt.Fprintf(f.w, "no result from: %s\n", strings.Join(f.order, ", "))
	}
	for _, line := range f.failed {
		fmt.Fprintf(f.w, "FAIL: %s\n", line)
	}
}

func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }
