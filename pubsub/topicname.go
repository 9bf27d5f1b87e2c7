package pubsub

import (
	"errors"
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
	if err := checkName(name); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidTopic, err)
	}
	return nil
}

// checkName applies the rules shared by topic and subscription names.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("%d bytes, the limit is %d", len(name), MaxTopicNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%q is not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%q has leading or trailing white space", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%q contains a control character", name)
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
