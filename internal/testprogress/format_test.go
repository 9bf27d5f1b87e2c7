package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/internal/syncbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testdata/run.jsonl is `go test -json -timeout 3s ./...` of a module with
// a package that passes (with subtests and a skip), one whose test fails
// beside passing tests, one that does not build, one that hangs until the
// timeout, and one without tests.
func recorded(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func format(t *testing.T, in []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(bytes.NewReader(in), &out, time.Hour); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestRecordedRun(t *testing.T) {
	t.Parallel()
	in := recorded(t)
	out := format(t, in)
	for _, want := range []string{
		"ok   example.com/fix/pass ",
		"FAIL example.com/fix/fail ",
		// the failing test's full output, its failing subtest's included
		"=== RUN   TestBroken\n",
		"fail_test.go:8: context before the failure\n",
		"fail_test.go:10: got 1, want 2\n",
		"--- FAIL: TestBroken/bad",
		"--- FAIL: TestBroken (",
		// the build failure, as the compiler said it
		"buildfail/b_test.go:5:43: cannot use 1",
		"FAIL example.com/fix/buildfail ",
		// the test that never ended, and the timeout's panic
		"FAIL example.com/fix/hang ",
		"h_test.go:11: waiting for a reply that never comes\n",
		"panic: test timed out after 3s",
		"packages: 1 ok, 3 failed, 1 without tests (",
		// the summary, last: a line per failed package naming what failed
		"FAIL: example.com/fix/buildfail (build failed)\n" +
			"FAIL: example.com/fix/fail TestBroken/bad\n" +
			"FAIL: example.com/fix/hang TestHangs (did not finish)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, noise := range []string{
		"passing noise", "good sub noise", "quiet detail", "sub one", // passing tests' output
		"notests",                      // a package without tests gets no line of its own
		`"Action"`,                     // no raw event
		"TestFast", "=== RUN   TestOK", // passing tests of failing packages
	} {
		if strings.Contains(out, noise) {
			t.Errorf("the report shows %q:\n%s", noise, out)
		}
	}
}

// Only the lines of the package that passed: one line for it, and the
// summary.
func TestPassingIsShort(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	for _, line := range bytes.SplitAfter(recorded(t), []byte("\n")) {
		if bytes.Contains(line, []byte(`"Package":"example.com/fix/pass"`)) ||
			bytes.Contains(line, []byte(`"Package":"example.com/fix/notests"`)) {
			in.Write(line)
		}
	}
	in.WriteString("with-postgres: a line that is not an event\n")
	got := format(t, in.Bytes())
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ok   example.com/fix/pass ") ||
		lines[1] != "with-postgres: a line that is not an event" ||
		!strings.HasPrefix(lines[2], "packages: 1 ok, 0 failed, 1 without tests (") {
		t.Errorf("report of a passing run:\n%s", got)
	}
}

// While a package runs and nothing is printed, a line names it and how
// long it has run.
func TestRunningLine(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(r, &out, 50*time.Millisecond) }()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, p := range []string{"example.com/slow", "example.com/slower"} {
		io.WriteString(w, `{"Time":"`+now+`","Action":"start","Package":"`+p+`"}`+"\n")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "running: example.com/slow (") {
		if time.Now().After(deadline) {
			t.Fatalf("no running line after 10s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(w, `{"Action":"pass","Package":"example.com/slow","Elapsed":61.2}`+"\n")
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"running: example.com/slow (0s), example.com/slower (0s)\n",
		"ok   example.com/slow 61.2s\n", "no result from: example.com/slower\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// The summary names every failed test that has no failed subtest, in
// the order they started, and a package that failed with every test
// passed (TestMain's goleak check, say) as such.
func TestSummaryNamesFailedTests(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	ev := func(action, pkg, test, output string) {
		in.WriteString(`{"Action":"` + action + `","Package":"` + pkg + `"`)
		if test != "" {
			in.WriteString(`,"Test":"` + test + `"`)
		}
		if output != "" {
			in.WriteString(`,"Output":` + strconv.Quote(output))
		}
		in.WriteString("}\n")
	}
	const e2e, leak = "example.com/e2e", "example.com/leak"
	for _, name := range []string{"TestA", "TestA/Mem", "TestA/DB", "TestA/NATS", "TestB", "TestC"} {
		ev("run", e2e, name, "")
	}
	ev("output", e2e, "TestA/DB", "    e2e_test.go:9: the app exited with exit status 1\n")
	ev("fail", e2e, "TestA/DB", "")
	ev("pass", e2e, "TestA/Mem", "")
	ev("fail", e2e, "TestA/NATS", "")
	ev("fail", e2e, "TestA", "")
	ev("fail", e2e, "TestC", "")
	ev("pass", e2e, "TestB", "")
	ev("fail", e2e, "", "")
	ev("run", leak, "TestOK", "")
	ev("pass", leak, "TestOK", "")
	ev("output", leak, "", "goleak: found unexpected goroutines\n")
	ev("fail", leak, "", "")
	out := format(t, []byte(in.String()))
	want := "FAIL: example.com/e2e TestA/DB, TestA/NATS, TestC\n" +
		"FAIL: example.com/leak (no test failed: its output above says why, from TestMain or the test binary's exit)\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("the report does not end with\n%s\nit is:\n%s", want, out)
	}
	for _, want := range []string{"e2e_test.go:9: the app exited", "goleak: found unexpected goroutines"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
