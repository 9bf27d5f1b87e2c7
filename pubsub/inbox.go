package pubsub

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key accepted by EnqueueUnique and Claim, in
// bytes.
const MaxKeyLen = 1000

// ValidateKey reports whether key can be a unique-enqueue or inbox key: 1
// to MaxKeyLen bytes of valid UTF-8 without NUL. The error wraps
// ErrInvalidKey.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeyLen)
	case !utf8.ValidString(key) || strings.ContainsRune(key, 0):
		return fmt.Errorf("%w: %q is not UTF-8 without NUL", ErrInvalidKey, key)
	}
	return nil
}

// Inbox is a Topic that remembers, per subscription, which keys its
// consumers have claimed: the idempotent consumer. A consumer claims a
// delivery (by its event's ID, say) before making its effects, and skips
// the effects when the claim is not the first, so a redelivered message
// makes them once.
type Inbox interface {
	// Claim records key for the handle's subscription and reports whether
	// it is the first claim of key there. When ctx carries a transaction
	// of the backend's store (WithTx), the claim is written in it and
	// exists exactly when the transaction commits, with the effects it
	// guards. Otherwise the backend records it at once, and release
	// forgets it again: call release when the effects failed, so that the
	// redelivery claims anew. release does nothing for a claim written
	// in a transaction (its rollback undoes it).
	Claim(ctx context.Context, key string) (first bool, release func(context.Context) error, err error)
}

// Claim claims key on t's subscription (see Inbox). Without an Inbox it
// returns ErrUnsupported; a bad key wraps ErrInvalidKey.
func Claim(ctx context.Context, t Topic, key string) (first bool, release func(context.Context) error, err error) {
	if err := ValidateKey(key); err != nil {
		return false, nil, err
	}
	in, ok := As[Inbox](t)
	if !ok {
		return false, nil, unsupported(t, "inbox")
	}
	return in.Claim(ctx, key)
}
