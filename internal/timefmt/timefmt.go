// Package timefmt writes durations the way the operator's tools show them
// (the conveyor CLI, the dashboard): rounded to what a person reads.
package timefmt

import (
	"fmt"
	"strings"
	"time"
)

// Age writes d rounded to what a person reads: "-" for none (0 or less),
// 850ms, 42s, 15m, 3m10s, 1h, 5h2m, then days and hours from 48h: 3d4h.
func Age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		s := d.Round(time.Second).String()
		if t, ok := strings.CutSuffix(s, "m0s"); ok {
			return t + "m"
		}
		return s
	case d < 48*time.Hour:
		s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
		if t, ok := strings.CutSuffix(s, "h0m"); ok {
			return t + "h"
		}
		return s
	}
	return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}
