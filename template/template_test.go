package template_test

import (
	"io/fs"
	"path"
	"testing"

	"github.com/conveyorgo/conveyor/template"
)

func TestFS(t *testing.T) {
	t.Parallel()
	root := template.FS()
	for _, name := range []string{"main.go", "bootstrap.go", "orders/events.go"} {
		if _, err := fs.Stat(root, name); err != nil {
			t.Errorf("the template lacks %s: %v", name, err)
		}
	}
	for _, name := range []string{"go.mod", "app/main.go"} {
		if _, err := fs.Stat(root, name); err == nil {
			t.Errorf("the template's root has %s: want the app's files at the root, and no go.mod", name)
		}
	}
}

// TestOnlySources checks that the template holds only Go and Markdown
// files, the ones the generator copies: anything else (such as the binary
// of a go build run in template/app) would be left out of generated apps,
// and bloat the generator's binary.
func TestOnlySources(t *testing.T) {
	t.Parallel()
	err := fs.WalkDir(template.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := path.Ext(name); ext != ".go" && ext != ".md" {
			t.Errorf("template/app/%s is neither Go nor Markdown: remove it", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
