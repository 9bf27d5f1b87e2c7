package logkeys_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/internal/logkeys"
)

// attrFuncs are slog's attribute constructors: their first argument is a
// key.
var attrFuncs = map[string]bool{"String": true, "Any": true, "Int": true, "Int64": true, "Uint64": true,
	"Float64": true, "Bool": true, "Duration": true, "Time": true, "Group": true}

// logMethods are the logging methods whose arguments after the message
// may be loose key-value pairs.
var logMethods = map[string]int{"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2, "Log": 3, "With": 0}

// TestKeys parses every non-test Go file of the module (but bench/, a
// module of its own, and template/, the app a user makes their own) and
// checks each key of a slog call against logkeys.Keys.
func TestKeys(t *testing.T) {
	root := "../.."
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bench" || d.Name() == "template" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			check := func(arg ast.Expr) {
				lit, ok := arg.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return
				}
				key, _ := strconv.Unquote(lit.Value)
				checked++
				if _, ok := logkeys.Keys[key]; !ok {
					t.Errorf("%s: log key %q is not in logkeys.Keys (use one that is, or add it with its meaning)", fset.Position(lit.Pos()), key)
				}
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "slog" && attrFuncs[sel.Sel.Name] && len(call.Args) > 0 {
				check(call.Args[0])
				return true
			}
			first, ok := logMethods[sel.Sel.Name]
			if !ok || !looksLikeLogger(sel.X) {
				return true
			}
			// Loose pairs: a string literal at an even offset after the
			// message is a key (an slog.Attr argument takes one place).
			for i := first; i < len(call.Args); i++ {
				arg := call.Args[i]
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					check(arg)
					i++ // its value
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d log keys found: the scan is broken", checked)
	}
}

// looksLikeLogger reports whether x names a *slog.Logger by the names the
// code base gives them (log, logger, Logger, l, and fields ending so).
func looksLikeLogger(x ast.Expr) bool {
	var name string
	switch v := x.(type) {
	case *ast.Ident:
		name = v.Name
	case *ast.SelectorExpr:
		name = v.Sel.Name
	case *ast.CallExpr: // slog.Default().Warn(...)
		if sel, ok := v.Fun.(*ast.SelectorExpr); ok {
			name = sel.Sel.Name
		}
	}
	switch name {
	case "log", "logger", "Logger", "l", "Default", "slog":
		return true
	}
	return false
}
