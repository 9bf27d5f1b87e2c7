package template_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/conveyorgo/conveyor/template"
)

var (
	tmpDir   string // removed after the tests
	buildApp = sync.OnceValues(func() (string, error) {
		bin := filepath.Join(tmpDir, "app")
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command(goCommand(), append(args, template.ImportPath)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", template.ImportPath, err, out)
		}
		return bin, nil
	})
)

func TestMain(m *testing.M) {
	var err error
	tmpDir, err = os.MkdirTemp("", "conveyor-template-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// appBinary returns the app's binary, built once per test run.
func appBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildApp()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// goCommand is the go command of the toolchain running the tests (go test
// puts its GOROOT/bin first in PATH).
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
