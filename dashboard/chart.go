package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Chart size, in the SVG's user units.
const (
	chartWidth  = 240
	chartHeight = 40
)

// chart is a small SVG line chart of a subscription's recent samples: its
// throughput (acks per second, when the backend counts acks) and its
// backlog (ready and scheduled messages), each scaled to its own maximum,
// over Options.History up to now.
type chart struct {
	Rate    string // the throughput line's points; "" without ack counts
	Backlog string // the backlog line's points
	MaxRate float64
	MaxBack int64
	Last    string // the last sample, in words, for the chart's title
	Span    string // how far back it goes
}

func newChart(ser []sample, history time.Duration) *chart {
	if len(ser) < 2 {
		return nil
	}
	end := ser[len(ser)-1].at
	start := end.Add(-history)
	x := func(at time.Time) string {
		f := float64(at.Sub(start)) / float64(history) * chartWidth
		return strconv.FormatFloat(max(f, 0), 'f', 1, 64)
	}
	y := func(v, top float64) string {
		if top <= 0 {
			return strconv.Itoa(chartHeight - 1)
		}
		return strconv.FormatFloat(chartHeight-1-v/top*(chartHeight-2), 'f', 1, 64)
	}
	c := &chart{Span: history.String()}
	rates := make([]float64, len(ser))
	counted := false
	for i, s := range ser {
		c.MaxBack = max(c.MaxBack, s.stats.Ready+s.stats.Scheduled)
		if i > 0 && s.acked >= 0 {
			rates[i] = float64(s.acked) / s.at.Sub(ser[i-1].at).Seconds()
			c.MaxRate = max(c.MaxRate, rates[i])
			counted = true
		}
	}
	var back, rate strings.Builder
	for i, s := range ser {
		fmt.Fprintf(&back, "%s,%s ", x(s.at), y(float64(s.stats.Ready+s.stats.Scheduled), float64(c.MaxBack)))
		if i > 0 && s.acked >= 0 {
			fmt.Fprintf(&rate, "%s,%s ", x(s.at), y(rates[i], c.MaxRate))
		}
	}
	c.Backlog = strings.TrimSpace(back.String())
	last := ser[len(ser)-1]
	c.Last = fmt.Sprintf("backlog %d (peak %d)", last.stats.Ready+last.stats.Scheduled, c.MaxBack)
	if counted {
		c.Rate = strings.TrimSpace(rate.String())
		c.Last = fmt.Sprintf("%.1f acked/s (peak %.1f), %s", rates[len(rates)-1], c.MaxRate, c.Last)
	}
	return c
}
