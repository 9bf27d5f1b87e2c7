package di

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// tagKey is the struct tag key read by Fill.
const tagKey = "inject"

// optionOptional is the only option an inject tag accepts.
const optionOptional = "optional"

// ParseTag parses the value of an inject struct tag: "" (by type), "name"
// (named), "name,optional" or ",optional" (optional, by name or by type).
//
// The name is the text before the first comma; it must not start or end with
// a space. Each option after it must be "optional", given once. A malformed
// tag returns an error wrapping ErrInvalidTarget.
func ParseTag(tag string) (name string, optional bool, err error) {
	name, optional, reason := parseTag(tag)
	if reason != "" {
		return "", false, errInvalid("inject tag %q: %s", tag, reason)
	}
	return name, optional, nil
}

// parseTag is ParseTag returning the reason of a failure instead of an error.
func parseTag(tag string) (name string, optional bool, reason string) {
	name, opts, hasOpts := strings.Cut(tag, ",")
	if strings.TrimSpace(name) != name {
		return "", false, "name has leading or trailing space"
	}
	for hasOpts {
		var opt string
		opt, opts, hasOpts = strings.Cut(opts, ",")
		switch {
		case opt == optionOptional && !optional:
			optional = true
		case opt == optionOptional:
			return "", false, `option "optional" given twice`
		case opt == "":
			return "", false, "empty option"
		default:
			return "", false, fmt.Sprintf("unknown option %q", opt)
		}
	}
	return name, optional, ""
}

// Fill sets the exported fields of the struct target points to that carry an
// inject tag:
//
//	DB     *sql.DB      `inject:""`               // the service of type *sql.DB
//	Orders pubsub.Topic `inject:"orders"`         // the pubsub.Topic named "orders"
//	Audit  pubsub.Topic `inject:"audit,optional"` // left as it is if nothing provides it
//	Cache  *Cache       `inject:",optional"`      // by type, optional
//
// A named field gets the service registered under that name, or else the one
// the Register factory of the field's type builds for that name. Fields
// without an inject tag are left alone, except that a field of struct type
// (not a pointer) whose own fields carry inject tags is filled the same way,
// recursively.
//
// Errors name the field by its path, <package>.<Type>.<Field>.<Field>...
// from the target's type (e.g. app.Handlers.Orders.Queue): ErrNotFound for a
// required field nothing provides, a provider's failure wrapped with the
// service name, ErrCycle, and ErrInvalidTarget when target is not a non-nil
// pointer to a struct, when an unexported field carries an inject tag (or
// holds a struct that has some), or when a tag is malformed (see ParseTag).
// Fill is all or nothing: on error no field is set.
//
// Inside a provider, pass the provider's ctx so the dependencies are
// recorded (see RegisterLazySingleton).
func Fill(ctx context.Context, target any) error {
	b, err := from(ctx, "Fill")
	if err != nil {
		return err
	}
	if target == nil {
		return errInvalid("Fill needs a pointer to a struct, got nil")
	}
	v := reflect.ValueOf(target)
	switch {
	case v.Kind() != reflect.Pointer:
		return errInvalid("Fill needs a pointer to a struct, got %s", v.Type())
	case v.IsNil():
		return errInvalid("Fill needs a non-nil pointer, got a nil %s", v.Type())
	case v.Type().Elem().Kind() != reflect.Struct:
		return errInvalid("Fill needs a pointer to a struct, got %s", v.Type())
	}
	v = v.Elem()
	pl := planFor(v.Type())
	if pl.err != nil {
		return pl.err
	}
	return b.fill(v, pl)
}

// fill resolves every field of pl, then sets them all, so that an error
// leaves dst untouched.
func (b *binding) fill(dst reflect.Value, pl *plan) error {
	var buf [8]any
	var set [8]bool
	vals, found := buf[:0], set[:0]
	if n := len(pl.fields); n > len(buf) {
		vals, found = make([]any, 0, n), make([]bool, 0, n)
	}
	for i := range pl.fields {
		f := &pl.fields[i]
		v, ok, err := b.resolveAny(f.key, f.optional, f.path)
		if err != nil {
			return err
		}
		vals, found = append(vals, v), append(found, ok)
	}
	for i := range pl.fields {
		if !found[i] {
			continue
		}
		f := &pl.fields[i]
		fv := dst.FieldByIndex(f.index)
		if vals[i] == nil { // a nil interface registered as such
			fv.SetZero()
			continue
		}
		fv.Set(reflect.ValueOf(vals[i]))
	}
	return nil
}

// plan is how to fill a struct type: its injectable fields, flattened
// through nested structs, or why the type cannot be filled. Plans are
// immutable once built.
type plan struct {
	fields []fieldPlan
	err    error
}

// fieldPlan is one field to fill.
type fieldPlan struct {
	index    []int      // for reflect.Value.FieldByIndex
	key      serviceKey // field type and tag name
	optional bool
	path     string // app.Handlers.Orders.Queue
}

// plans caches a *plan per struct reflect.Type. It is the package's only
// shared state: a cache of values computed from types alone, which never
// change once stored.
var plans sync.Map

// planFor returns the plan of the struct type t, building it once.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{}
	p.err = collectFields(t, nil, typePath(t), &p.fields)
	if p.err != nil {
		p.fields = nil
	}
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan)
}

// typePath is the root of the field paths of t: its package-qualified name
// (app.Handlers), or "struct" for an unnamed struct type.
func typePath(t reflect.Type) string {
	if t.Name() == "" {
		return "struct"
	}
	return t.String()
}

// collectFields appends to out the injectable fields of the struct type t,
// whose own index and path are index and path.
func collectFields(t reflect.Type, index []int, path string, out *[]fieldPlan) error {
	for i := range t.NumField() {
		f := t.Field(i)
		fpath := path + "." + f.Name
		findex := append(append(make([]int, 0, len(index)+1), index...), i)

		if tag, ok := f.Tag.Lookup(tagKey); ok {
			if !f.IsExported() {
				return errInvalid("field %s: unexported field has an inject tag", fpath)
			}
			name, optional, reason := parseTag(tag)
			if reason != "" {
				return errInvalid("field %s: inject tag %q: %s", fpath, tag, reason)
			}
			*out = append(*out, fieldPlan{
				index:    findex,
				key:      serviceKey{typ: f.Type, name: name},
				optional: optional,
				path:     fpath,
			})
			continue
		}

		if f.Type.Kind() != reflect.Struct {
			continue
		}
		before := len(*out)
		if err := collectFields(f.Type, findex, fpath, out); err != nil {
			return err
		}
		// reflect can set the exported fields of an embedded unexported
		// struct, not those of a named unexported one.
		if len(*out) > before && !f.IsExported() && !f.Anonymous {
			return errInvalid("field %s: unexported field holds inject-tagged fields", fpath)
		}
	}
	return nil
}
