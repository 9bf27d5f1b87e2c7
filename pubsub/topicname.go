package pubsub

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTopicNameLen is the longest topic name accepted, in bytes.
const MaxTopicNameLen = 200

// ValidateTopicName reports whether name can name a topic: 1 to
// MaxTopicNameLen bytes of valid UTF-8, with no control characters and no
// leading or trailing white space. The error wraps ErrInvalidTopic.
//
// Names are data, never code: a backend passes them to its store only as
// parameters, so quotes or semicolons are allowed.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalidTopic)
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidTopic, len(name), MaxTopicNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidTopic, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: %q has leading or trailing white space", ErrInvalidTopic, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q contains a control character", ErrInvalidTopic, name)
		}
	}
	return nil
}

// OpenTopic returns ps.Topic(name) after checking name with
// ValidateTopicName, so a bad name is an error now rather than on first use.
func OpenTopic(ps PubSub, name string) (Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	return ps.Topic(name), nil
}
