package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor"
)

// checkModulePath reports whether p can be the path of a new module. The
// rules are those of golang.org/x/mod/module.CheckPath: slash-separated
// elements; the first a lower-case domain name with a dot; each element of
// letters, digits and - . _ ~, not starting or ending with a dot, and not a
// name Windows reserves; a final /vN only for N >= 2. The error says what
// is wrong and gives an example of a good path.
func checkModulePath(p string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("invalid module path %q: %s (a module path looks like example.com/shop or github.com/you/shop)",
			p, fmt.Sprintf(format, args...))
	}
	switch {
	case p == "":
		return bad("it is empty")
	case !utf8.ValidString(p):
		return bad("it is not valid UTF-8")
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/"):
		return bad("it begins or ends with a slash")
	case strings.Contains(p, "//"):
		return bad("it has an empty element (//)")
	case p == conveyor.ModulePath || strings.HasPrefix(p, conveyor.ModulePath+"/"):
		return bad("it is inside %s, the module the app requires", conveyor.ModulePath)
	}
	elems := strings.Split(p, "/")
	for i, e := range elems {
		if reason := checkElem(e); reason != "" {
			return bad("element %q %s", e, reason)
		}
		if i == 0 {
			if reason := checkDomain(e); reason != "" {
				return bad("the first element %q %s", e, reason)
			}
		}
	}
	if last := elems[len(elems)-1]; len(elems) > 1 && isMajorSuffix(last) {
		if last == "v0" || last == "v1" || last[1] == '0' {
			return bad("the major version suffix /%s is not allowed: suffixes start at /v2, without leading zeros", last)
		}
	}
	return nil
}

// checkDomain checks the first element of a module path: a domain name.
func checkDomain(e string) string {
	if !strings.Contains(e, ".") {
		return "has no dot: a module path starts with a domain name"
	}
	if e[0] == '-' {
		return "begins with a dash"
	}
	for _, r := range e {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.') {
			return fmt.Sprintf("has %q: a domain name has only lower-case letters, digits, dots and dashes", r)
		}
	}
	return ""
}

// checkElem checks one element of a module path, returning why it is bad.
func checkElem(e string) string {
	switch {
	case e == "." || e == "..":
		return "is a relative path element"
	case e[0] == '.':
		return "begins with a dot"
	case e[len(e)-1] == '.':
		return "ends with a dot"
	}
	for _, r := range e {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r)) {
			return fmt.Sprintf("has %q: use only letters, digits and - . _ ~", r)
		}
	}
	// Windows reserves these names, with any extension.
	short, _, _ := strings.Cut(e, ".")
	switch strings.ToUpper(short) {
	case "CON", "PRN", "AUX", "NUL",
		"COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
		"LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9":
		return "is a file name Windows reserves"
	}
	// Windows short names (FOO~1) confuse file systems.
	if i := strings.LastIndexByte(e, '~'); i >= 0 && i < len(e)-1 && allDigits(e[i+1:]) {
		return "ends in a tilde and digits, like a Windows short name"
	}
	return ""
}

// isMajorSuffix reports whether e looks like a major version suffix: v and digits.
func isMajorSuffix(e string) bool {
	return len(e) >= 2 && e[0] == 'v' && allDigits(e[1:])
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
