package main

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/conveyorgo/conveyor"
	"github.com/conveyorgo/conveyor/template"
)

// placeholderVersion is the version required of conveyor when a replace
// directive provides it: the go command's own placeholder.
const placeholderVersion = "v0.0.0-00010101000000-000000000000"

// requirement is one line of a require directive.
type requirement struct {
	path, version string
}

// moduleInfo is what the generator needs from conveyor's go.mod.
type moduleInfo struct {
	goVersion string        // the go directive
	requires  []requirement // every requirement, direct or not
}

// parseGoMod reads the go directive and the requirements of a go.mod. It
// reads the subset of the syntax that `go mod tidy` writes, which is all
// conveyor's go.mod uses.
func parseGoMod(data []byte) (moduleInfo, error) {
	var mi moduleInfo
	inRequire := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inRequire && f[0] == ")":
			inRequire = false
		case inRequire && len(f) == 2:
			mi.requires = append(mi.requires, requirement{f[0], f[1]})
		case inRequire:
			return mi, fmt.Errorf("go.mod:%d: unexpected require line %q", n, sc.Text())
		case f[0] == "go" && len(f) == 2:
			mi.goVersion = f[1]
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inRequire = true
		case f[0] == "require" && len(f) == 3:
			mi.requires = append(mi.requires, requirement{f[1], f[2]})
		}
	}
	if err := sc.Err(); err != nil {
		return mi, err
	}
	if mi.goVersion == "" {
		return mi, fmt.Errorf("go.mod: no go directive")
	}
	return mi, nil
}

// newGoMod returns the go.mod of the app modPath: the go version and the
// requirements of conveyor's go.mod, conveyor itself at version (or, with
// replace, at the placeholder version and replaced by that directory), and
// the modules that imports (the app's imports) use marked direct.
func newGoMod(conveyorMod moduleInfo, modPath, version, replace string, imports []string) []byte {
	if replace != "" && version == "" {
		version = placeholderVersion
	}
	// Conveyor's modules (the base module and the sub-modules the template
	// requires, docs/modules.md) are required at version, and each replaced
	// by its directory in the checkout replace. The template module itself
	// is not one the app needs.
	conv := []requirement{{conveyor.ModulePath, version}}
	var direct, indirect []requirement
	for _, r := range conveyorMod.requires {
		switch {
		case r.path == conveyor.ModulePath || r.path == template.ModulePath:
			continue
		case strings.HasPrefix(r.path, conveyor.ModulePath+"/"):
			conv = append(conv, requirement{r.path, version})
		case slices.ContainsFunc(imports, func(imp string) bool { return moduleOf(imp, conveyorMod.requires) == r.path }):
			direct = append(direct, r)
		default:
			indirect = append(indirect, r)
		}
	}
	direct = append(conv, direct...)
	slices.SortFunc(indirect, func(a, b requirement) int { return strings.Compare(a.path, b.path) })
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n", modPath, conveyorMod.goVersion)
	writeRequires(&b, direct, "")
	writeRequires(&b, indirect, " // indirect")
	if replace != "" {
		b.WriteString("\nreplace (\n")
		for _, r := range conv {
			dir := replace
			if sub := strings.TrimPrefix(r.path, conveyor.ModulePath+"/"); sub != r.path {
				dir = strings.TrimSuffix(replace, string(filepath.Separator)) + string(filepath.Separator) + filepath.FromSlash(sub)
			}
			fmt.Fprintf(&b, "\t%s => %s\n", r.path, quoteModFile(dir))
		}
		b.WriteString(")\n")
	}
	return []byte(b.String())
}

func writeRequires(b *strings.Builder, rs []requirement, comment string) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("\nrequire (\n")
	for _, r := range rs {
		fmt.Fprintf(b, "\t%s %s%s\n", r.path, r.version, comment)
	}
	b.WriteString(")\n")
}

// moduleOf returns the module of rs that provides the package imp: the
// longest module path that is imp or a prefix of it, or "".
func moduleOf(imp string, rs []requirement) string {
	best := ""
	for _, r := range rs {
		if (imp == r.path || strings.HasPrefix(imp, r.path+"/")) && len(r.path) > len(best) {
			best = r.path
		}
	}
	return best
}

// quoteModFile quotes s for a go.mod file when it has characters that
// would end or break a token there.
func quoteModFile(s string) string {
	if strings.ContainsAny(s, " \t\"'`\\") || strings.Contains(s, "//") {
		return strconv.Quote(s)
	}
	return s
}
