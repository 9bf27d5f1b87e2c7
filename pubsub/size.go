package pubsub

// DefaultMaxDataSize is the payload size limit backends use unless
// configured otherwise: 4 MiB. Data over a backend's limit is refused with
// ErrTooLarge.
const DefaultMaxDataSize = 4 << 20
