package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/wrap"
)

func TestValidateHeader(t *testing.T) {
	t.Parallel()
	most := pubsub.Header{}
	for i := range pubsub.MaxHeaderKeys {
		most[fmt.Sprint("k", i)] = "v"
	}
	tooMany := maps.Clone(most)
	tooMany["one-more"] = "v"
	// Keys and values of exactly MaxHeaderSize bytes in all.
	fullSize := pubsub.Header{"k": strings.Repeat("v", pubsub.MaxHeaderSize-1)}
	for _, c := range []struct {
		name   string
		h      pubsub.Header
		bad    string // a part of the error naming what is wrong; "" when valid
		badKey string // the key the error names, if one
	}{
		{"Nil", nil, "", ""},
		{"Empty", pubsub.Header{}, "", ""},
		{"Trace", pubsub.Header{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}, "", ""},
		{"EveryKeyCharacter", pubsub.Header{"azAZ09-_.": "x"}, "", ""},
		{"EmptyValue", pubsub.Header{"k": ""}, "", ""},
		{"SpacesAndUnicodeInValue", pubsub.Header{"k": "  ünïcödé ✓ \"quoted\": {json} \\ "}, "", ""},
		{"LongestKey", pubsub.Header{strings.Repeat("k", 255): "v"}, "", ""},
		{"MostKeys", most, "", ""},
		{"LargestSize", fullSize, "", ""},
		{"EmptyKey", pubsub.Header{"": "v"}, "1 to 255 bytes", ""},
		{"KeyTooLong", pubsub.Header{strings.Repeat("k", 256): "v"}, "1 to 255 bytes", ""},
		{"SpaceInKey", pubsub.Header{"a b": "v"}, "' '", "a b"},
		{"ColonInKey", pubsub.Header{"a:b": "v"}, "':'", "a:b"},
		{"NonASCIIKey", pubsub.Header{"clé": "v"}, "byte 2", "clé"},
		{"LineBreakInValue", pubsub.Header{"k": "a\nb"}, "control character", "k"},
		{"CarriageReturnInValue", pubsub.Header{"k": "a\rb"}, "control character", "k"},
		{"TabInValue", pubsub.Header{"k": "a\tb"}, "control character", "k"},
		{"NULInValue", pubsub.Header{"k": "a\x00b"}, "control character", "k"},
		{"DELInValue", pubsub.Header{"k": "a\x7fb"}, "control character", "k"},
		{"ValueNotUTF8", pubsub.Header{"k": "a\xffb"}, "not valid UTF-8", "k"},
		{"ValueNotUTF8AfterUnicode", pubsub.Header{"k": "ü\xffb"}, "not valid UTF-8", "k"},
		{"LineBreakAfterUnicode", pubsub.Header{"k": "ü\nb"}, "control character", "k"},
		{"DELAfterUnicode", pubsub.Header{"k": "✓\x7f"}, "control character", "k"},
		{"TooManyKeys", tooMany, "65 keys", ""},
		{"TooLarge", pubsub.Header{"k": strings.Repeat("v", pubsub.MaxHeaderSize)}, "bytes, the most is", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := pubsub.ValidateHeader(c.h)
			if c.bad == "" {
				if err != nil {
					t.Fatalf("ValidateHeader: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, pubsub.ErrInvalidHeader) {
				t.Fatalf("ValidateHeader: %v, want an error wrapping ErrInvalidHeader", err)
			}
			if !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ValidateHeader: %q, want it to say %q", err, c.bad)
			}
			if c.badKey != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", c.badKey)) {
				t.Errorf("ValidateHeader: %q, want it to name the key %q", err, c.badKey)
			}
		})
	}
}

func TestWithHeader(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	header := func(ctx context.Context) pubsub.Header {
		t.Helper()
		h, err := wrap.HeaderFrom(ctx)
		if err != nil {
			t.Fatalf("HeaderFrom: %v", err)
		}
		return h
	}
	if h := header(bg); h != nil {
		t.Fatalf("HeaderFrom a context without one = %q, want nil", h)
	}
	for _, empty := range []pubsub.Header{nil, {}} {
		if ctx := pubsub.WithHeader(bg, empty); ctx != bg {
			t.Fatalf("WithHeader(ctx, %#v) made a new context; want ctx itself", empty)
		}
	}

	given := pubsub.Header{"a": "outer", "b": "outer"}
	outer := pubsub.WithHeader(bg, given)
	given["a"] = "changed" // WithHeader keeps a copy
	inner := pubsub.WithHeader(outer, pubsub.Header{"b": "inner", "c": "inner"})
	if h, want := header(outer), (pubsub.Header{"a": "outer", "b": "outer"}); !maps.Equal(h, want) {
		t.Fatalf("outer header %q, want %q (the inner WithHeader must not change it)", h, want)
	}
	if h, want := header(inner), (pubsub.Header{"a": "outer", "b": "inner", "c": "inner"}); !maps.Equal(h, want) {
		t.Fatalf("merged header %q, want %q: outer, then inner, inner's values winning", h, want)
	}
	if ctx := pubsub.WithHeader(inner, pubsub.Header{}); header(ctx)["c"] != "inner" {
		t.Fatal("an empty WithHeader dropped the header already asked for")
	}

	// HeaderFrom validates: each enqueue fails on a bad header, whichever
	// WithHeader added it.
	bad := pubsub.WithHeader(inner, pubsub.Header{"no spaces": "x"})
	if h, err := wrap.HeaderFrom(bad); !errors.Is(err, pubsub.ErrInvalidHeader) || h != nil {
		t.Fatalf("HeaderFrom with an invalid key = %q, %v; want nil, ErrInvalidHeader", h, err)
	}
	if _, err := wrap.HeaderFrom(pubsub.WithHeader(bad, pubsub.Header{"d": "fine"})); !errors.Is(err, pubsub.ErrInvalidHeader) {
		t.Fatalf("HeaderFrom with an invalid key merged under a valid one: %v, want ErrInvalidHeader", err)
	}
}

// headerMessage is a Message with a header; plainMessage has none.
type plainMessage struct{ pubsub.Message }

type headerMessage struct {
	plainMessage
	h pubsub.Header
}

func (m headerMessage) Header() pubsub.Header { return m.h }

type wrappedMessage struct{ inner pubsub.Message }

func (w wrappedMessage) ID() string                     { return w.inner.ID() }
func (w wrappedMessage) Data() []byte                   { return w.inner.Data() }
func (w wrappedMessage) Ack(ctx context.Context) error  { return w.inner.Ack(ctx) }
func (w wrappedMessage) Nack(ctx context.Context) error { return w.inner.Nack(ctx) }
func (w wrappedMessage) Unwrap() pubsub.Message         { return w.inner }

func TestMessageHeader(t *testing.T) {
	t.Parallel()
	h := pubsub.Header{"tenant": "acme"}
	if got := pubsub.MessageHeader(wrappedMessage{wrappedMessage{headerMessage{h: h}}}); !maps.Equal(got, h) {
		t.Fatalf("MessageHeader through two wrappers = %q, want %q", got, h)
	}
	if got := pubsub.MessageHeader(wrappedMessage{plainMessage{}}); got != nil {
		t.Fatalf("MessageHeader of a message without one = %q, want nil", got)
	}
}
