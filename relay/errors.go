package relay

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them (or an
// error of package pubsub) with context: match them with errors.Is.
var (
	// ErrInvalidOptions is returned by New for an option that makes no
	// sense, naming the field.
	ErrInvalidOptions = errors.New("relay: invalid options")
	// ErrRunning is returned by Run while another Run of the same Relay
	// has not returned.
	ErrRunning = errors.New("relay: already running")
)
