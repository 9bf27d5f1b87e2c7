package event

import (
	"fmt"
	"reflect"
	"unicode"
	"unicode/utf8"
)

// EventType is an event's stable name on the wire, the CloudEvents "type"
// attribute, by which a Service routes events to listeners. Choose it once
// and keep it: it is part of the contract with every consumer, in this
// process or another language. Reverse-DNS names are customary
// ("com.example.order.placed").
type EventType string

// MaxTypeLen is the longest EventType accepted, in bytes.
const MaxTypeLen = 255

// Event is a value that can be dispatched: its type name, and its data as
// encoding/json marshals it.
//
// Type must return a constant: the same name for every value of the Go
// type, including its zero value (a Service calls it on the zero value, or
// on a new value for a pointer type, to learn which events a listener
// takes). It is never derived from the Go type's name, so renaming a
// struct does not reroute its events.
type Event interface {
	Type() EventType
}

// Validate reports whether t can name events: 1 to MaxTypeLen bytes of
// valid UTF-8 with no control characters or white space. The error wraps
// ErrInvalidEvent.
func (t EventType) Validate() error {
	switch {
	case t == "":
		return fmt.Errorf("%w: empty event type", ErrInvalidEvent)
	case len(t) > MaxTypeLen:
		return fmt.Errorf("%w: event type of %d bytes, the limit is %d", ErrInvalidEvent, len(t), MaxTypeLen)
	case printableASCII(string(t)):
		return nil
	case !utf8.ValidString(string(t)):
		return fmt.Errorf("%w: event type %q is not valid UTF-8", ErrInvalidEvent, string(t))
	}
	for _, r := range string(t) {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: event type %q contains white space or a control character", ErrInvalidEvent, string(t))
		}
	}
	return nil
}

// printableASCII reports whether s is ASCII with no control character or
// space: the event types of nearly every app, checked without decoding runes.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// TypeOf returns the EventType of the Go type E, calling Type on its zero
// value (on a new value when E is a pointer type). It fails when E is an
// interface type, when Type panics or when the name is invalid.
func TypeOf[E Event]() (t EventType, err error) {
	rt := reflect.TypeFor[E]()
	var e E
	switch rt.Kind() {
	case reflect.Interface:
		return "", fmt.Errorf("%w: %s is an interface type; listen for a concrete event type", ErrInvalidListener, rt)
	case reflect.Pointer:
		e = reflect.New(rt.Elem()).Interface().(E)
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = "", fmt.Errorf("%w: %s.Type() panicked on a zero value: %v", ErrInvalidListener, rt, r)
		}
	}()
	t = e.Type()
	if err := t.Validate(); err != nil {
		return "", fmt.Errorf("%s.Type(): %w", rt, err)
	}
	return t, nil
}
