package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/conveyorgo/conveyor"
	"github.com/conveyorgo/conveyor/template"
)

const usage = `conveyor starts new apps built on conveyor, dependency-injected pub/sub for Go,
and operates their messages.

Usage:
  conveyor new [flags] MODULE_PATH [DIR]     write a new app from the template
  conveyor help [COMMAND]                    show the help of a command

Operating (on PostgreSQL with --database-url or $DATABASE_URL, or on NATS
with --nats-url or $NATS_URL; the in-memory backend lives inside its app's
process, out of reach of a command):
`

const newUsage = `Usage: conveyor new [flags] MODULE_PATH [DIR]

Writes a new app, the Go module MODULE_PATH, into DIR (default: the last
element of MODULE_PATH, in the current directory). DIR must not exist or be empty.
DIR must be outside every Go module's tree: with a go.mod in DIR or in a
directory above it, new refuses and writes nothing, since the app is a
module of its own. So from a conveyor checkout, give a DIR outside it:
go run ./cmd/conveyor new example.com/shop ../shop.

The app is conveyor's template: an HTTP service where POST /orders
dispatches an event that listeners handle in the background, with a
periodic event, a health check and GET /stats; on Go channels in memory by
default, on PostgreSQL with CONVEYOR_BACKEND=db and DATABASE_URL. Its
go.mod requires conveyor and the same dependencies as conveyor, with a
go.sum, so it builds at once.

Flags:
  -replace DIR   build against the conveyor checkout in DIR: the go.mod gets
                 'replace github.com/conveyorgo/conveyor => DIR'. The default
                 when this command runs from a checkout (go run ./cmd/conveyor).
  -version V     require conveyor at version V (such as v0.3.0). The default
                 is this command's own version when it has one (go install
                 github.com/conveyorgo/conveyor/cmd/conveyor@V).

Examples:
  conveyor new example.com/shop             # writes ./shop, outside any module
  conveyor new -replace ~/src/conveyor github.com/you/shop ~/src/shop
`

func main() {
	e := buildEnv()
	e.vars = map[string]string{"DATABASE_URL": os.Getenv("DATABASE_URL"), "NATS_URL": os.Getenv("NATS_URL")}
	e.stdin = os.Stdin
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		e.terminal = true
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, e))
}

// env is what the command knows about itself and its surroundings.
type env struct {
	// At most one of the two is set.
	version  string // the version of conveyor it was built from, if a go.mod can require it
	checkout string // else the conveyor checkout it was built from, if any

	vars     map[string]string // the environment variables the operator's commands read
	stdin    io.Reader         // where confirmations are read (nil: none)
	terminal bool              // stdin is a terminal, where a person can confirm
}

// getenv returns the environment variable name, "" when unset.
func (e env) getenv(name string) string { return e.vars[name] }

// buildEnv finds the version of conveyor the command was built from: a
// release (go install ...@v0.3.0), else the checkout it was built in (go
// run ./cmd/conveyor), else a pseudo-version (go install ...@commit).
func buildEnv() env {
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == conveyor.ModulePath && isRelease(bi.Main.Version) {
		version = bi.Main.Version
	}
	if version != "" && !pseudoVersion.MatchString(version) {
		return env{version: version}
	}
	// This file's path at build time: in a checkout, <root>/cmd/conveyor/main.go.
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if checkCheckout(root) == nil {
			return env{checkout: root}
		}
	}
	return env{version: version}
}

// pseudoVersion matches the end of a pseudo-version: a time and a commit.
var pseudoVersion = regexp.MustCompile(`[.-]\d{14}-[0-9a-f]{12}$`)

// isRelease reports whether v is a version a go.mod can require from the
// module proxy: not "(devel)", not a local build ("+dirty").
func isRelease(v string) bool {
	return strings.HasPrefix(v, "v") && !strings.Contains(v, "+")
}

// run runs the command with args and returns its exit code: 0 on success,
// 1 when the command failed, 2 for a usage mistake.
func run(args []string, stdout, stderr io.Writer, e env) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, fullUsage())
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "new":
		return runNew(rest, stdout, stderr, e)
	case "help", "-h", "-help", "--help":
		switch {
		case len(rest) == 0:
			fmt.Fprint(stdout, fullUsage())
		case rest[0] == "new":
			fmt.Fprint(stdout, newUsage)
		case findOpsCommand(rest[0]) != nil:
			fmt.Fprint(stdout, findOpsCommand(rest[0]).usage())
		default:
			names := []string{"new"}
			for _, c := range opsCommands {
				names = append(names, c.name)
			}
			fmt.Fprintf(stderr, "conveyor help: unknown command %q; the commands are: %s\n", rest[0], strings.Join(names, ", "))
			return 2
		}
		return 0
	default:
		if c := findOpsCommand(cmd); c != nil {
			return runOps(c, rest, stdout, stderr, e)
		}
		fmt.Fprintf(stderr, "conveyor: unknown command %q\n\n%s", cmd, fullUsage())
		return 2
	}
}

// fullUsage is the command's help: usage, then one line per operator's
// command, then the exit codes.
func fullUsage() string {
	var b strings.Builder
	b.WriteString(usage)
	for _, c := range opsCommands {
		fmt.Fprintf(&b, "  %-41s  %s\n", "conveyor "+c.name+" "+c.synopsisOrArgs(), c.summary)
	}
	b.WriteString("\nRun 'conveyor help new' for the flags of new, 'conveyor help COMMAND' for another's.\n\n")
	b.WriteString(exitCodesHelp)
	return b.String()
}

func runNew(args []string, stdout, stderr io.Writer, e env) int {
	fs := flag.NewFlagSet("new", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	replace := fs.String("replace", "", "")
	version := fs.String("version", "", "")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, newUsage)
		return 0
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "conveyor new: "+format+"\nRun 'conveyor help new' for usage.\n", a...)
		return 2
	}
	switch {
	case err != nil:
		return usageErr("%v", err)
	case len(pos) == 0:
		return usageErr("missing MODULE_PATH, as in: conveyor new example.com/shop")
	case len(pos) > 2:
		return usageErr("too many arguments: %q (want MODULE_PATH [DIR])", pos[2:])
	}
	modPath := pos[0]
	if err := checkModulePath(modPath); err != nil {
		return usageErr("%v", err)
	}
	dir := defaultDir(modPath)
	if len(pos) == 2 {
		dir = pos[1]
	}
	if *version != "" && !isRelease(*version) {
		return usageErr("-version %q: want a release version, such as v0.3.0", *version)
	}
	if err := checkOutsideModules(dir); err != nil {
		var mt *ModuleTreeError
		if errors.As(err, &mt) {
			fmt.Fprintf(stderr, "conveyor new: %v.\nThe app is a Go module of its own: give a DIR outside that tree, as in:\n  conveyor new %s %s\n",
				err, modPath, shellQuote(mt.Suggest(defaultDir(modPath))))
		} else {
			fmt.Fprintf(stderr, "conveyor new: %v\n", err)
		}
		return 1
	}

	// Which conveyor the app builds against.
	ver, repl, note := *version, *replace, ""
	switch {
	case repl != "":
	case ver != "":
	case e.version != "":
		ver = e.version
	case e.checkout != "":
		repl = e.checkout
		note = fmt.Sprintf("This conveyor runs from the checkout %s: the app's go.mod replaces conveyor with it (see -replace).\n", repl)
	default:
		fmt.Fprintln(stderr, "conveyor new: this conveyor is a development build, so it does not know which conveyor release to require:\n"+
			"pass -replace DIR to build against a conveyor checkout in DIR, or -version V to require release V.")
		return 1
	}
	if repl != "" {
		abs, err := filepath.Abs(repl)
		if err == nil {
			err = checkCheckout(abs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "conveyor new: -replace %s: %v\n", repl, err)
			return 1
		}
		repl = abs
	}

	a, err := render(template.FS(), modPath, ver, repl)
	if err != nil {
		fmt.Fprintf(stderr, "conveyor new: %v\n", err)
		return 1
	}
	if err := a.write(dir); err != nil {
		if errors.Is(err, errNotEmpty) {
			fmt.Fprintf(stderr, "conveyor new: %v: pick a new directory, or empty this one.\n", err)
		} else {
			fmt.Fprintf(stderr, "conveyor new: write the app: %v\n", err)
		}
		return 1
	}

	fmt.Fprintf(stdout, "Created %s in %s (%d files).\n%s\nNext:\n", modPath, dir, len(a.files), note)
	fmt.Fprintf(stdout, "  cd %s\n", shellQuote(dir))
	if repl == "" {
		fmt.Fprintf(stdout, "  go mod tidy     # fetches conveyor %s and records its checksums\n", ver)
	}
	// The app is built, then run, rather than go run: go run exits 1 when
	// Ctrl-C stops the app, which itself exits 0 after a clean stop.
	fmt.Fprint(stdout, `  go build -o app . && ./app   # serves on http://127.0.0.1:8080, events in memory; Ctrl-C stops it
  curl -X POST http://127.0.0.1:8080/orders -H 'Content-Type: application/json' -d '{"item":"book","qty":1}'
  go test ./...

On PostgreSQL: CONVEYOR_BACKEND=db DATABASE_URL=postgres://... ./app
`)
	return 0
}

// parseInterspersed parses the flags of args wherever they are, before or
// after the positional arguments, and returns the positional arguments.
// After "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if len(args) > 0 && args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// checkCheckout reports whether dir is the root of a conveyor checkout.
func checkCheckout(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("not a conveyor checkout: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	if strings.TrimSpace(first) != "module "+conveyor.ModulePath {
		return fmt.Errorf("not a conveyor checkout: its go.mod is not the module %s", conveyor.ModulePath)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./~+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
