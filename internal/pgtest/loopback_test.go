package pgtest

import "testing"

func TestCheckLoopback(t *testing.T) {
	for _, c := range []struct {
		dsn string
		ok  bool
	}{
		{"postgres://postgres@127.0.0.1:5432/postgres", true},
		{"postgres://postgres@localhost/postgres", true},
		{"host=::1 user=postgres", true},
		{"postgres://postgres@10.0.0.7:5432/postgres", false},
		{"postgres://postgres@db.example.com/postgres", false},
	} {
		if err := checkLoopback(c.dsn); (err == nil) != c.ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", c.dsn, err, c.ok)
		}
	}
}
