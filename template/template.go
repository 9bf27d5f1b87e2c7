package template

import (
	"embed"
	"io/fs"
)

// ModulePath is the path of the template module (docs/modules.md).
const ModulePath = "github.com/conveyorgo/conveyor/template"

// ImportPath is the import path of the app in this module. The root of FS
// is the package at ImportPath; its sub-packages are ImportPath + "/...".
const ImportPath = "github.com/conveyorgo/conveyor/template/app"

//go:embed all:app
var files embed.FS

// The template module's go.mod and go.sum: a generated app requires what
// the template requires (docs/modules.md).
//
//go:embed go.mod go.sum
var moduleFiles embed.FS

// GoMod returns the content of the template module's go.mod.
func GoMod() []byte { return mustRead("go.mod") }

// GoSum returns the content of the template module's go.sum.
func GoSum() []byte { return mustRead("go.sum") }

func mustRead(name string) []byte {
	data, err := moduleFiles.ReadFile(name)
	if err != nil {
		panic("template: embedded " + name + ": " + err.Error()) // cannot happen: checked at build time
	}
	return data
}

// FS returns the app's files: the root of the generated module.
func FS() fs.FS {
	sub, err := fs.Sub(files, "app")
	if err != nil {
		panic("template: " + err.Error()) // cannot happen: "app" is a valid path
	}
	return sub
}
