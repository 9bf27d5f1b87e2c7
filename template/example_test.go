package template_test

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/conveyorgo/conveyor/template"
)

// The template's bootstrap picks the backend in one line each way.
func ExampleFS() {
	src, err := fs.ReadFile(template.FS(), "bootstrap.go")
	if err != nil {
		panic(err)
	}
	for line := range strings.Lines(string(src)) {
		if strings.Contains(line, "pubsub.Register(ictx)") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// err = dbpubsub.Register(ictx) // durable in PostgreSQL, shared by every process on the database
	// err = channelpubsub.Register(ictx) // in this process's memory
}
