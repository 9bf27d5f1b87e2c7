package pubsub

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"orders.v2/eu-west", true},
		{`quote'"; DROP TABLE x; --`, true},
		{"名前", true},
		{strings.Repeat("x", MaxTopicNameLen), true},
		{"", false},
		{" ", false},
		{" orders", false},
		{"orders\n", false},
		{"a\x00b", false},
		{"bad\xff", false},
		{strings.Repeat("x", MaxTopicNameLen+1), false},
	}
	for _, c := range cases {
		err := ValidateTopicName(c.name)
		if c.ok != (err == nil) {
			t.Errorf("ValidateTopicName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopicName(%q) = %v, want it to wrap ErrInvalidTopic", c.name, err)
		}
	}
}

func FuzzValidateTopicName(f *testing.F) {
	for _, s := range []string{"orders", "", " x", "a\x00", "\xff", strings.Repeat("y", 300), "o'k; --"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateTopicName(name)
		if err != nil && !errors.Is(err, ErrInvalidTopic) {
			t.Fatalf("error %v does not wrap ErrInvalidTopic", err)
		}
		if err == nil && (name == "" || len(name) > MaxTopicNameLen || strings.TrimSpace(name) != name) {
			t.Fatalf("accepted %q", name)
		}
	})
}
