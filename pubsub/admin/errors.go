package admin

import (
	"errors"
	"fmt"

	"github.com/conveyorgo/conveyor/pubsub"
)

// Sentinel errors of the operations calls, returned by every backend that
// has the ability asked for; wrapped with context: match them with
// errors.Is. A backend lacking the ability says pubsub.ErrUnsupported.
var (
	// ErrNotFound is returned when a message asked for by ID does not exist
	// in the state asked for (for example RequeueDead of a message that is
	// not dead).
	ErrNotFound = errors.New("admin: message not found")
	// ErrInvalidID is returned for a message ID that cannot be one of the
	// backend's (Peeker.Message, Canceler).
	ErrInvalidID = errors.New("admin: invalid message ID")
	// ErrInvalidCursor is returned by Peek for a PeekOptions.After that is
	// not the Next of a page of the same state.
	ErrInvalidCursor = errors.New("admin: invalid peek cursor")
	// ErrWrongState is returned when a message asked for by ID is not in a
	// state the call applies to (Cancel of a processing or dead message).
	ErrWrongState = errors.New("admin: message in the wrong state")
)

func unsupported(v any, what string) error {
	return fmt.Errorf("%w: %s (%T)", pubsub.ErrUnsupported, what, v)
}
