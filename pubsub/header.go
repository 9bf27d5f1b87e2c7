package pubsub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/conveyorgo/conveyor/internal/headerctx"
)

// Header is the metadata a message carries beside its data: a trace
// context (traceparent, tracestate), a correlation id, a tenant. Keys are
// case-sensitive. Every delivery of a message, and every subscription's
// copy, carries the header it was enqueued with.
type Header map[string]string

// Limits of a Header (see ValidateHeader).
const (
	// MaxHeaderKeys is the most keys a Header may hold.
	MaxHeaderKeys = 64
	// MaxHeaderSize is the most bytes a Header's keys and values may add
	// up to.
	MaxHeaderSize = 16 << 10
)

// WithHeader returns a copy of ctx asking every enqueue called with it
// (Enqueue, EnqueueAt, EnqueueBatch, EnqueueUnique, and an
// event.Dispatcher's methods) to give each message it makes the header h,
// merged over the header ctx already asks for (h's values win). It passes
// through any wrapper and any layer that hands ctx on, as WithTx does. An
// empty h asks for nothing more.
//
// Every conveyor backend carries headers (pubsubtest checks it); the
// receiving side reads them with MessageHeader. An enqueue whose header
// ValidateHeader rejects fails with an error wrapping ErrInvalidHeader and
// enqueues nothing.
func WithHeader(ctx context.Context, h Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	if old, _ := headerctx.From(ctx); len(old) > 0 {
		merged := make(map[string]string, len(old)+len(h))
		maps.Copy(merged, old)
		maps.Copy(merged, h)
		return context.WithValue(ctx, headerctx.Key{}, merged)
	}
	return context.WithValue(ctx, headerctx.Key{}, map[string]string(maps.Clone(h)))
}

// ValidateHeader reports whether every backend can carry h: at most
// MaxHeaderKeys keys and MaxHeaderSize bytes; each key 1 to 255 bytes of
// ASCII letters, digits, '-', '_' and '.'; each value valid UTF-8 without
// control characters (a NATS header line cannot hold a line break). The
// error wraps ErrInvalidHeader and names the key.
func ValidateHeader(h Header) error {
	if len(h) > MaxHeaderKeys {
		return fmt.Errorf("%w: %d keys, the most is %d", ErrInvalidHeader, len(h), MaxHeaderKeys)
	}
	size := 0
	for k, v := range h {
		size += len(k) + len(v)
		if err := checkHeaderKey(k); err != nil {
			return fmt.Errorf("%w: key %q: %s", ErrInvalidHeader, k, err)
		}
		if err := checkHeaderValue(v); err != nil {
			return fmt.Errorf("%w: the value of %q %s", ErrInvalidHeader, k, err)
		}
	}
	if size > MaxHeaderSize {
		return fmt.Errorf("%w: %d bytes, the most is %d", ErrInvalidHeader, size, MaxHeaderSize)
	}
	return nil
}

// checkHeaderValue fails when v is not valid UTF-8 or holds a control
// character; it reads an ASCII value a byte at a time, and decodes runes
// only from the first byte that is not ASCII.
func checkHeaderValue(v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= utf8.RuneSelf {
			if !utf8.ValidString(v[i:]) {
				return errors.New("is not valid UTF-8")
			}
			for _, r := range v[i:] {
				if r < 0x20 || r == 0x7f {
					return fmt.Errorf("holds the control character %U", r)
				}
			}
			return nil
		}
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("holds the control character %U", rune(c))
		}
	}
	return nil
}

func checkHeaderKey(k string) error {
	if k == "" || len(k) > 255 {
		return fmt.Errorf("a key has 1 to 255 bytes, this one %d", len(k))
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			continue
		}
		return fmt.Errorf("byte %d, %q, is not an ASCII letter, digit, '-', '_' or '.'", i, c)
	}
	return nil
}

// Headerer is a Message that carries the header it was enqueued with.
type Headerer interface {
	// Header returns the message's header, nil if it has none. The
	// caller must not modify it.
	Header() Header
}

// MessageHeader returns m's header: the one its enqueue's ctx asked for
// (WithHeader), nil when there was none or the backend does not carry
// headers.
func MessageHeader(m Message) Header {
	if h, ok := As[Headerer](m); ok {
		return h.Header()
	}
	return nil
}

// HeaderMessageID is the header key that carries a message's identity
// across brokers: a relay (package relay) publishes each message with it,
// set to the message's Identity, so a message relayed twice (through two
// relays, or published again after a destination forgot its key) keeps
// the identity of the message first enqueued, as CloudEvents' id does
// for an event. A backend gives the copy an ID of its own (a row's or a
// stream's sequence): the identity travels in the header only.
const HeaderMessageID = "conveyor-message-id"

// Identity returns m's stable identity: its HeaderMessageID header when it
// has one, else its ID. It is the same for every delivery of m and for
// every copy relayed from it: the key for an inbox (ClaimMessage).
func Identity(m Message) string {
	if id := MessageHeader(m)[HeaderMessageID]; id != "" {
		return id
	}
	return m.ID()
}

// ClaimMessage claims m's Identity on t's inbox (see Claim): the first
// claim of a message, however many copies of it arrive (redelivered,
// relayed twice), is the only one that reports first. Copies of one
// message on different subscriptions are claimed on each.
func ClaimMessage(ctx context.Context, t Topic, m Message) (first bool, release func(context.Context) error, err error) {
	return Claim(ctx, t, Identity(m))
}
