package main

import (
	"strings"
	"testing"
)

func TestCheckModulePath(t *testing.T) {
	t.Parallel()
	valid := []string{
		"example.com/shop",
		"example.com",
		"github.com/You/Shop_2",
		"gitlab.example.org/a/b/c.d-e~f",
		"example.com/shop/v2",
		"example.com/shop/v10",
		"my-host.io/x",
	}
	for _, p := range valid {
		if err := checkModulePath(p); err != nil {
			t.Errorf("checkModulePath(%q): %v", p, err)
		}
	}
	invalid := []struct{ path, want string }{
		{"", "empty"},
		{"shop", "no dot"},
		{"/example.com/shop", "slash"},
		{"example.com/shop/", "slash"},
		{"example.com//shop", "empty element"},
		{"Example.com/shop", "lower-case"},
		{"exa_mple.com/shop", "lower-case"},
		{"-example.com/shop", "dash"},
		{".example.com/shop", "begins with a dot"},
		{"example.com/.shop", "begins with a dot"},
		{"example.com/shop.", "ends with a dot"},
		{"example.com/../shop", "relative"},
		{"example.com/my shop", `' '`},
		{"example.com/shop@v1", `'@'`},
		{"example.com/sh\xffop", "UTF-8"},
		{"example.com/café", `'é'`},
		{"example.com/con", "Windows reserves"},
		{"example.com/LPT1.txt", "Windows reserves"},
		{"example.com/shop~1", "short name"},
		{"example.com/shop/v1", "/v1"},
		{"example.com/shop/v0", "/v0"},
		{"example.com/shop/v02", "leading zeros"},
		{"github.com/conveyorgo/conveyor", "inside github.com/conveyorgo/conveyor"},
		{"github.com/conveyorgo/conveyor/template/app", "inside"},
	}
	for _, c := range invalid {
		err := checkModulePath(c.path)
		if err == nil {
			t.Errorf("checkModulePath(%q) accepted it", c.path)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "example.com/shop") {
			t.Errorf("checkModulePath(%q) = %q; want it to mention %q and an example", c.path, err, c.want)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"example.com/shop":     "shop",
		"example.com/shop/v2":  "shop",
		"example.com":          "example.com",
		"github.com/you/a.b-c": "a.b-c",
	} {
		if got := defaultDir(path); got != want {
			t.Errorf("defaultDir(%q) = %q, want %q", path, got, want)
		}
	}
}
