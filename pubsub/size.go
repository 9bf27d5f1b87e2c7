package pubsub

import "fmt"

// DefaultMaxDataSize is the payload size limit backends use unless
// configured otherwise: 4 MiB.
const DefaultMaxDataSize = 4 << 20

// CheckSize returns an error wrapping ErrTooLarge when data is longer than
// limit bytes. Backends call it on Enqueue.
func CheckSize(data []byte, limit int) error {
	if len(data) > limit {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), limit)
	}
	return nil
}
