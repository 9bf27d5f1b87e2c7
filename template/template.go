package template

import (
	"embed"
	"io/fs"
)

// ImportPath is the import path of the app in this module. The root of FS
// is the package at ImportPath; its sub-packages are ImportPath + "/...".
const ImportPath = "github.com/conveyorgo/conveyor/template/app"

//go:embed all:app
var files embed.FS

// FS returns the app's files: the root of the generated module.
func FS() fs.FS {
	sub, err := fs.Sub(files, "app")
	if err != nil {
		panic("template: " + err.Error()) // cannot happen: "app" is a valid path
	}
	return sub
}
