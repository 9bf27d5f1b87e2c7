package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor"
)

func TestParseGoMod(t *testing.T) {
	t.Parallel()
	mi, err := parseGoMod(conveyor.GoMod())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mi.goVersion, "1.") {
		t.Errorf("go version %q", mi.goVersion)
	}
	if moduleOf("github.com/samber/do/v2", mi.requires) != "github.com/samber/do/v2" ||
		moduleOf("github.com/uptrace/bun/dialect/pgdialect", mi.requires) != "github.com/uptrace/bun/dialect/pgdialect" ||
		moduleOf("github.com/uptrace/bun/migrate", mi.requires) != "github.com/uptrace/bun" {
		t.Errorf("requirements %v", mi.requires)
	}

	mi, err = parseGoMod([]byte("module m\n\ngo 1.25.0\n\nrequire a.org/x v1.0.0\nrequire (\n\tb.org/y v0.1.0 // indirect\n)\n"))
	if err != nil || mi.goVersion != "1.25.0" || !slices.Equal(mi.requires, []requirement{{"a.org/x", "v1.0.0"}, {"b.org/y", "v0.1.0"}}) {
		t.Errorf("parseGoMod: %+v, %v", mi, err)
	}
	if _, err := parseGoMod([]byte("module m\n")); err == nil {
		t.Error("a go.mod without a go directive was accepted")
	}
}
