package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor"
	"github.com/conveyorgo/conveyor/template"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot is the conveyor checkout the tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkCheckout(root); err != nil {
		t.Fatal(err)
	}
	return root
}

func runCmd(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb, e)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "conveyor new [flags] MODULE_PATH [DIR]"},
		{[]string{"-h"}, "conveyor help [COMMAND]"},
		{[]string{"help"}, "Run 'conveyor help new'"},
		{[]string{"help", "new"}, "-replace DIR"},
		{[]string{"new", "-h"}, "-version V"},
		{[]string{"new", "--help"}, "DIR must not exist or be empty"},
		{[]string{"help"}, "conveyor peek TOPIC [-state S] [-limit N]"},
		{[]string{"help"}, "4  refused"},
		{[]string{"help", "peek"}, "-state S     ready (default), scheduled, processing or dead"},
		{[]string{"purge", "-h"}, "-yes"},
		{[]string{"topics", "--help"}, "-database-url URL    PostgreSQL (default $DATABASE_URL)"},
	}
	for _, c := range cases {
		code, out, errs := runCmd(t, env{}, c.args...)
		if code != 0 || !strings.Contains(out, c.want) || errs != "" {
			t.Errorf("conveyor %s: exit %d, stdout %q, stderr %q; want exit 0 and help mentioning %q",
				strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
}

func TestUsageMistakes(t *testing.T) {
	t.Parallel()
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dev := env{checkout: repoRoot(t)}
	cases := []struct {
		name string
		env  env
		args []string
		code int
		want []string // fragments of stderr
	}{
		{"NoCommand", dev, nil, 2, []string{"Usage:"}},
		{"UnknownCommand", dev, []string{"init"}, 2, []string{`unknown command "init"`, "conveyor new"}},
		{"HelpUnknown", dev, []string{"help", "init"}, 2, []string{`unknown command "init"`}},
		{"NoModulePath", dev, []string{"new"}, 2, []string{"missing MODULE_PATH", "conveyor new example.com/shop"}},
		{"TooManyArgs", dev, []string{"new", "example.com/shop", "a", "b"}, 2, []string{"too many arguments"}},
		{"UnknownFlag", dev, []string{"new", "-force", "example.com/shop"}, 2, []string{"-force", "conveyor help new"}},
		{"InvalidPath", dev, []string{"new", "shop"}, 2, []string{`"shop"`, "domain name", "example.com/shop"}},
		{"BadVersion", dev, []string{"new", "-version", "latest", "example.com/shop"}, 2, []string{"-version", "v0.3.0"}},
		{"NonEmptyDir", dev, []string{"new", "example.com/shop", nonEmpty}, 1, []string{"not empty", "notes.txt", "pick a new directory"}},
		{"DirIsFile", dev, []string{"new", "example.com/shop", file}, 1, []string{"not a directory"}},
		{"BadReplace", dev, []string{"new", "-replace", t.TempDir(), "example.com/shop", filepath.Join(t.TempDir(), "x")}, 1,
			[]string{"-replace", "not a conveyor checkout"}},
		{"DevBuild", env{}, []string{"new", "example.com/shop", filepath.Join(t.TempDir(), "x")}, 1,
			[]string{"development build", "-replace DIR", "-version V"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, c.env, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, c.code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not mention %q", errs, w)
				}
			}
		})
	}
	if entries, _ := os.ReadDir(nonEmpty); len(entries) != 1 {
		t.Errorf("the non-empty directory was changed: %v", entries)
	}
}

// TestNew generates an app against this checkout and checks that it is a
// standalone module, requiring what conveyor requires, that vets, builds
// and passes its tests without the network.
func TestNew(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "shop")
	code, out, errs := runCmd(t, env{}, "new", "example.com/shop", dir, "-replace", root)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, w := range []string{"Created example.com/shop in " + dir, "cd " + dir, "go build -o app . && ./app", "curl -X POST"} {
		if !strings.Contains(out, w) {
			t.Errorf("the output does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "go mod tidy") {
		t.Errorf("the output asks for go mod tidy, needless with -replace:\n%s", out)
	}

	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"module example.com/shop\n",
		"\tgithub.com/conveyorgo/conveyor " + placeholderVersion + "\n",
		"\tgo.uber.org/goleak v", // the app's tests use it
		"\tgithub.com/conveyorgo/conveyor => " + root + "\n",
		"\tgithub.com/conveyorgo/conveyor/natspubsub => " + filepath.Join(root, "natspubsub") + "\n",
	} {
		if !strings.Contains(string(gomod), w) {
			t.Errorf("go.mod lacks %q:\n%s", w, gomod)
		}
	}
	// Every module conveyor requires, at conveyor's version; those the
	// app imports (its telemetry's among them) required directly.
	mi, err := parseGoMod(template.GoMod())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mi.requires {
		if strings.HasPrefix(r.path, conveyor.ModulePath+"/") {
			continue // conveyor's own modules: at the placeholder version, replaced
		}
		if !strings.Contains(string(gomod), "\t"+r.path+" "+r.version+"\n") &&
			!strings.Contains(string(gomod), "\t"+r.path+" "+r.version+" // indirect\n") {
			t.Errorf("go.mod does not require %s %s, as conveyor does:\n%s", r.path, r.version, gomod)
		}
	}
	direct, _, _ := strings.Cut(string(gomod), "// indirect")
	for _, m := range []string{"go.opentelemetry.io/otel/sdk/metric", "go.opentelemetry.io/otel/exporters/prometheus",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp", "github.com/prometheus/client_golang",
		"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"} {
		if !strings.Contains(direct, "\t"+m+" ") {
			t.Errorf("go.mod does not require %s directly:\n%s", m, gomod)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if bytes.Contains(b, []byte("conveyor/template")) {
			t.Errorf("%s still mentions the template's import path", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// The template module's dependencies in the module cache, as a
	// build of the repository leaves them (this test may run first).
	download := exec.Command("go", "mod", "download")
	download.Dir = filepath.Join("..", "..", "template")
	download.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := download.CombinedOutput(); err != nil {
		t.Fatalf("go mod download in template/: %v\n%s", err, out)
	}
	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "build", "-o", filepath.Join(t.TempDir(), "shop"), ".")
	goCmd(t, dir, "test", "-count=1", "./...")
}

// goCmd runs the go command in dir without the network: go.mod and go.sum
// must be complete, and the module cache holds the dependencies after the
// repository's own build.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its GOROOT/bin first in PATH
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in the generated app: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestNewVersion checks the go.mod and the advice of an app that requires
// a conveyor release, with no checkout.
func TestNewVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // exists, empty
	code, out, errs := runCmd(t, env{version: "v1.2.3"}, "new", "github.com/you/shop/v2", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if !strings.Contains(out, "go mod tidy") {
		t.Errorf("the output does not ask for go mod tidy (conveyor's checksums are not known):\n%s", out)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "\tgithub.com/conveyorgo/conveyor v1.2.3\n") || strings.Contains(string(gomod), "replace") {
		t.Errorf("go.mod:\n%s", gomod)
	}
	main, err := os.ReadFile(filepath.Join(dir, "http.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), `"github.com/you/shop/v2/orders"`) {
		t.Errorf("http.go does not import the app's orders package at its new path")
	}
}

func TestBuildEnv(t *testing.T) {
	t.Parallel()
	// The test binary is a development build of this checkout, which it
	// finds unless it was built with -trimpath.
	want := env{checkout: repoRoot(t)}
	if _, file, _, _ := runtime.Caller(0); !filepath.IsAbs(file) {
		want = env{}
	}
	if e := buildEnv(); e.version != want.version || e.checkout != want.checkout {
		t.Errorf("buildEnv() = %+v, want %+v", e, want)
	}
	for v, want := range map[string]bool{
		"v0.0.0-20261129115500-8f203f4abcd1":      true,
		"v1.2.4-0.20261129115500-8f203f4abcd1":    true,
		"v1.2.3-pre.0.20261129115500-8f203f4abcd": false,
		"v1.2.3": false,
	} {
		if pseudoVersion.MatchString(v) != want {
			t.Errorf("pseudoVersion.MatchString(%q) = %v", v, !want)
		}
	}
}
