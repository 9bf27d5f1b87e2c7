package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/conveyorgo/conveyor/template"
)

// app is a generated app, in memory: file paths (slash-separated, relative
// to the module root) and their contents.
type app struct {
	files map[string][]byte
}

// names returns the app's file paths, sorted.
func (a *app) names() []string {
	names := make([]string, 0, len(a.files))
	for n := range a.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// render builds the app modPath from tmpl (the template's files): its Go
// and Markdown files (see isTemplateFile), the Go files' imports of the
// template's packages rewritten to modPath; a go.mod requiring conveyor at
// version, or replaced by the directory replace; and conveyor's go.sum.
func render(tmpl fs.FS, modPath, version, replace string) (*app, error) {
	a := &app{files: map[string][]byte{}}
	var imports []string
	err := fs.WalkDir(tmpl, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isTemplateFile(name) {
			return err
		}
		data, err := fs.ReadFile(tmpl, name)
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, ".go") {
			var imps []string
			data, imps, err = rewriteImports(name, data, template.ImportPath, modPath)
			if err != nil {
				return err
			}
			imports = append(imports, imps...)
		}
		a.files[name] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	mi, err := parseGoMod(template.GoMod())
	if err != nil {
		return nil, fmt.Errorf("the template's embedded %w", err)
	}
	a.files["go.mod"] = newGoMod(mi, modPath, version, replace, imports)
	a.files["go.sum"] = template.GoSum()
	return a, nil
}

// isTemplateFile reports whether the file name of the template belongs in
// an app: Go files and Markdown. Anything else (a binary left by go build
// in the template's directory, an editor's backup) is not copied.
func isTemplateFile(name string) bool {
	return strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md")
}

// rewriteImports returns the Go source src with every import of from, or
// of a package under it, changed to the same under to, and the import
// paths of the result. The source is reformatted (gofmt) only when an
// import changed.
func rewriteImports(name string, src []byte, from, to string) ([]byte, []string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, nil, fmt.Errorf("template file %s: %w", name, err)
	}
	changed := false
	var imports []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("template file %s: import %s: %w", name, imp.Path.Value, err)
		}
		if p == from || strings.HasPrefix(p, from+"/") {
			p = to + p[len(from):]
			imp.Path.Value = strconv.Quote(p)
			changed = true
		}
		imports = append(imports, p)
	}
	if !changed {
		return src, imports, nil
	}
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, nil, fmt.Errorf("template file %s: %w", name, err)
	}
	return buf.Bytes(), imports, nil
}

// errNotEmpty is returned by write for a target directory with files in it.
var errNotEmpty = errors.New("directory is not empty")

// write writes the app into dir, which must not exist or be empty. On
// failure it removes what it wrote.
func (a *app) write(dir string) (err error) {
	entries, err := os.ReadDir(dir)
	created := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		created = true
	case err != nil:
		if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s: %w (it has %s)", dir, errNotEmpty, entries[0].Name())
	}
	// dir was empty: on failure, make it so again.
	defer func() {
		if err == nil {
			return
		}
		if created {
			os.RemoveAll(dir)
			return
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}()
	for _, name := range a.names() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeNew(p, a.files[name]); err != nil {
			return err
		}
	}
	return nil
}

// writeNew creates the file p with data; it fails if p exists.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// defaultDir is the directory an app is written to when none is given: the
// last element of its module path that is not a major version suffix.
func defaultDir(modPath string) string {
	base := path.Base(modPath)
	if isMajorSuffix(base) && strings.Contains(modPath, "/") {
		base = path.Base(path.Dir(modPath))
	}
	return base
}
