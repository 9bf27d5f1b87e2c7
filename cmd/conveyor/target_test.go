package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory in a module's tree (a go.mod in it or above it) is
// refused; one in no module's tree is not.
func TestCheckOutsideModules(t *testing.T) {
	t.Parallel()
	free := t.TempDir()
	mod := filepath.Join(t.TempDir(), "mod")
	if err := os.MkdirAll(filepath.Join(mod, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/mod\n\ngo 1.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	for _, c := range []struct {
		name, dir, modRoot string
		conveyor           bool
	}{
		{"Free", filepath.Join(free, "shop"), "", false},
		{"FreeExisting", free, "", false},
		{"ModuleRoot", mod, mod, false},
		{"InModule", filepath.Join(mod, "sub", "shop"), mod, false},
		{"InCheckout", filepath.Join(root, "cmd", "conveyor", "shop"), root, true},
		{"Relative", "shop", root, true}, // the tests run in cmd/conveyor
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkOutsideModules(c.dir)
			if c.modRoot == "" {
				if err != nil {
					t.Fatalf("checkOutsideModules(%s) = %v, want nil", c.dir, err)
				}
				return
			}
			var mt *ModuleTreeError
			if !errors.Is(err, ErrInsideModule) || !errors.As(err, &mt) {
				t.Fatalf("checkOutsideModules(%s) = %v, want a *ModuleTreeError wrapping ErrInsideModule", c.dir, err)
			}
			if mt.ModRoot != c.modRoot || mt.Conveyor != c.conveyor {
				t.Errorf("module root %s (conveyor %v), want %s (%v)", mt.ModRoot, mt.Conveyor, c.modRoot, c.conveyor)
			}
		})
	}
}

// `conveyor new example.com/shop` run in the conveyor checkout (or any
// module), without a directory or with one inside, writes nothing and says
// where to write instead.
func TestNewInsideModule(t *testing.T) {
	root := repoRoot(t)
	inCheckout := filepath.Join(root, "cmd", "conveyor", "testdata-shop")
	t.Cleanup(func() { os.RemoveAll(inCheckout) }) // were it written
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/mod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := env{checkout: root}
	for _, c := range []struct {
		name, cwd string
		args      []string
		written   string // what must not exist afterwards
		want      []string
	}{
		{"CheckoutDefaultDir", "", []string{"new", "example.com/shop"}, "shop",
			[]string{"shop is inside the conveyor checkout " + root, filepath.Join(root, "go.mod"),
				"conveyor new example.com/shop " + filepath.Join(filepath.Dir(root), "shop")}},
		{"CheckoutDir", "", []string{"new", "example.com/shop", inCheckout}, inCheckout,
			[]string{inCheckout + " is inside the conveyor checkout " + root}},
		{"OtherModuleDefaultDir", mod, []string{"new", "example.com/shop/v2"}, filepath.Join(mod, "shop"),
			[]string{"shop is inside the Go module at " + mod, filepath.Join(filepath.Dir(mod), "shop")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.cwd != "" {
				t.Chdir(c.cwd)
			}
			code, out, errs := runCmd(t, dev, c.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stdout %q, stderr %q)", code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not say %q", errs, w)
				}
			}
			if _, err := os.Stat(c.written); err == nil {
				os.RemoveAll(c.written)
				t.Errorf("%s was written", c.written)
			}
		})
	}
}
