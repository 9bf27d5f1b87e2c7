package natstest

import "testing"

func TestCheckLoopback(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"nats://127.0.0.1:4222", true},
		{"nats://localhost:4222", true},
		{"nats://[::1]:4222", true},
		{"nats://127.0.0.1:4222,nats://127.0.0.2:4223", true},
		{"nats://10.0.0.7:4222", false},
		{"nats://127.0.0.1:4222,nats://nats.example.com:4222", false},
	} {
		if err := checkLoopback(c.url); (err == nil) != c.ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", c.url, err, c.ok)
		}
	}
}
