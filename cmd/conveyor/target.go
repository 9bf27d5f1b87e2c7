package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/conveyorgo/conveyor"
)

// ErrInsideModule is returned (wrapped in a *ModuleTreeError) for a target
// directory inside a Go module's tree, such as the conveyor checkout that
// `go run ./cmd/conveyor new example.com/shop` runs from: the app is a
// module of its own, and written there it would sit in the other module's
// tree (its files seen by `go test ./...` and `go vet ./...` there, as a
// nested module, and in the other module's repository).
var ErrInsideModule = errors.New("directory is inside another Go module")

// ModuleTreeError says which module's tree a target directory is in.
type ModuleTreeError struct {
	Dir      string // the target directory, as given
	ModRoot  string // the directory of the go.mod above it
	Conveyor bool   // ModRoot is a conveyor checkout
}

func (e *ModuleTreeError) Error() string {
	what := "the Go module at " + e.ModRoot
	if e.Conveyor {
		what = "the conveyor checkout " + e.ModRoot
	}
	return fmt.Sprintf("%s is inside %s, whose go.mod is %s", e.Dir, what, filepath.Join(e.ModRoot, "go.mod"))
}

func (e *ModuleTreeError) Unwrap() error { return ErrInsideModule }

// Suggest returns a directory beside the module's tree for the app whose
// default directory is base.
func (e *ModuleTreeError) Suggest(base string) string {
	return filepath.Join(filepath.Dir(e.ModRoot), base)
}

// checkOutsideModules returns a *ModuleTreeError when dir, or a directory
// above it, holds a go.mod, as the go command looks for one. dir need not
// exist.
func checkOutsideModules(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var first *ModuleTreeError
	for d := abs; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			if checkCheckout(d) == nil {
				return &ModuleTreeError{Dir: dir, ModRoot: d, Conveyor: true}
			}
			if first == nil {
				first = &ModuleTreeError{Dir: dir, ModRoot: d}
			}
			// A sub-module of conveyor's (cmd, template, natspubsub, ...;
			// docs/modules.md): the checkout is further up.
			if !isConveyorSubModule(d) {
				return first
			}
		}
		if filepath.Dir(d) == d {
			if first != nil {
				return first
			}
			return nil
		}
	}
}

// isConveyorSubModule reports whether the go.mod in dir is that of one of
// conveyor's sub-modules (a module path under conveyor's).
func isConveyorSubModule(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	return strings.HasPrefix(strings.TrimSpace(first), "module "+conveyor.ModulePath+"/")
}
