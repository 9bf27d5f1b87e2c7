package main

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/conveyorgo/conveyor/template"
)

func TestRewriteImports(t *testing.T) {
	t.Parallel()
	const from = "github.com/conveyorgo/conveyor/template/app"
	src := `package main

import (
	"fmt"

	"github.com/conveyorgo/conveyor/event"

	"github.com/conveyorgo/conveyor/template/app/orders"
	"github.com/conveyorgo/conveyor/template/app/orders/internal/x"
	appsibling "github.com/conveyorgo/conveyor/template/application"
)

var _ = fmt.Sprint(event.EventType(""), orders.Topic, x.X, appsibling.Y)
`
	got, imports, err := rewriteImports("main.go", []byte(src), from, "example.com/shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"example.com/shop/orders"`, `"example.com/shop/orders/internal/x"`,
		`"github.com/conveyorgo/conveyor/event"`, `appsibling "github.com/conveyorgo/conveyor/template/application"`} {
		if !strings.Contains(string(got), w) {
			t.Errorf("the rewritten file lacks %s:\n%s", w, got)
		}
	}
	want := []string{"fmt", "github.com/conveyorgo/conveyor/event", "example.com/shop/orders",
		"example.com/shop/orders/internal/x", "github.com/conveyorgo/conveyor/template/application"}
	if !slices.Equal(imports, want) {
		t.Errorf("imports %q, want %q", imports, want)
	}

	same, _, err := rewriteImports("a.go", []byte("package a\n\nimport  \"fmt\"\n\nvar _ = fmt.Sprint\n"), from, "example.com/shop")
	if err != nil || string(same) != "package a\n\nimport  \"fmt\"\n\nvar _ = fmt.Sprint\n" {
		t.Errorf("a file without template imports was changed: %q, %v", same, err)
	}
	if _, _, err := rewriteImports("bad.go", []byte("package"), from, "example.com/shop"); err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Errorf("a file that does not parse: %v, want an error naming it", err)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	tmpl := fstest.MapFS{
		"main.go":     {Data: []byte("package main\n\nimport _ \"github.com/conveyorgo/conveyor/template/app/x\"\n\nfunc main() {}\n")},
		"x/x.go":      {Data: []byte("package x\n\nimport _ \"github.com/jackc/pgx/v5/stdlib\"\n")},
		"x/x_test.go": {Data: []byte("package x\n\nimport _ \"go.uber.org/goleak\"\n")},
		"README.md":   {Data: []byte("# app\n")},
		"app":         {Data: []byte("\x7fELF a binary left by go build")},
		"main.go~":    {Data: []byte("an editor's backup")},
	}
	a, err := render(tmpl, "example.com/shop", "", "/src/conveyor")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "go.mod", "go.sum", "main.go", "x/x.go", "x/x_test.go"}
	if got := a.names(); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if !strings.Contains(string(a.files["main.go"]), `"example.com/shop/x"`) {
		t.Errorf("main.go: %s", a.files["main.go"])
	}
	if string(a.files["go.sum"]) != string(template.GoSum()) {
		t.Error("go.sum is not the template module's")
	}
	gomod := string(a.files["go.mod"])
	direct, _, _ := strings.Cut(gomod, "// indirect")
	for _, m := range []string{"github.com/jackc/pgx/v5 ", "go.uber.org/goleak "} {
		if !strings.Contains(direct, m) {
			t.Errorf("go.mod does not require %s directly:\n%s", m, gomod)
		}
	}
	for _, m := range []string{"github.com/uptrace/bun ", "github.com/samber/do/v2 "} {
		if strings.Contains(direct, m) || !strings.Contains(gomod, m) {
			t.Errorf("go.mod does not require %s indirectly:\n%s", m, gomod)
		}
	}
	// Every conveyor module is replaced by its directory in the checkout.
	for _, w := range []string{"\nreplace (\n\tgithub.com/conveyorgo/conveyor => /src/conveyor\n",
		"\tgithub.com/conveyorgo/conveyor/natspubsub => /src/conveyor/natspubsub\n",
		"\tgithub.com/conveyorgo/conveyor/otelconveyor => /src/conveyor/otelconveyor\n"} {
		if !strings.Contains(gomod, w) {
			t.Errorf("go.mod lacks %q:\n%s", w, gomod)
		}
	}
}
