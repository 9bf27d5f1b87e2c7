package timefmt

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "-"},
		{850 * time.Millisecond, "850ms"},
		{42 * time.Second, "42s"},
		{15 * time.Minute, "15m"},
		{3*time.Minute + 10*time.Second, "3m10s"},
		{time.Hour, "1h"},
		{5*time.Hour + 2*time.Minute, "5h2m"},
		{76 * time.Hour, "3d4h"},
	} {
		if got := Age(c.d); got != c.want {
			t.Errorf("Age(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
