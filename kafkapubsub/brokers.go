package kafkapubsub

import (
	"fmt"
	"net"
	"strings"
)

// ParseBrokers reads a list of brokers as $KAFKA_BROKERS holds it:
// host:port of each, comma-separated, spaces around each ignored. An
// empty list, or an entry that is not host:port, is an error wrapping
// ErrInvalidConfig that names it.
func ParseBrokers(s string) ([]string, error) {
	var brokers []string
	for b := range strings.SplitSeq(s, ",") {
		b = strings.TrimSpace(b)
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("%w: broker %q in %q: want host:port of each broker, comma-separated, as in 127.0.0.1:9092,127.0.0.1:9093",
				ErrInvalidConfig, b, s)
		}
		brokers = append(brokers, b)
	}
	return brokers, nil
}
