// Command testprogress turns the output of `go test -json` into a short
// report while the tests run: a line per package as it finishes, a line
// naming the packages still running whenever nothing was printed for a
// while, the full output of every failing (or unfinished) test, and a
// summary whose last lines name each failed package's failed tests
// ("FAIL: pkg TestX/sub"), so that the tail of a long report says what
// failed. `make test` pipes go test through it:
//
//	set -o pipefail; go test -json ./... | go run ./internal/testprogress
//
// It reads standard input to its end and exits 0 (1 only when it cannot
// read it), so a pipeline with pipefail exits with go test's status. Lines
// that are not test2json events (a script's own output) are copied as they
// are.
package main
