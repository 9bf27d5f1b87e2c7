package dbpubsub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/conveyorgo/conveyor/internal/batch"
)

// The notifier. PostgreSQL serialises the commits of transactions that
// NOTIFY (they take a database-wide lock at commit), so a NOTIFY in every
// enqueue would cap concurrent producers at one commit at a time. An
// enqueue outside a caller's transaction therefore inserts without
// notifying, wakes this PubSub's own consumers at once, and marks the
// topic's channel; the notifier sends the notifications of every channel
// marked since its last round in one statement, at most one round per
// spacing. Other processes hear of a message within that and a round trip
// after its commit; if the process dies before, their poll finds it. An
// enqueue in a caller's transaction notifies in its statement, so that
// consumers wake when it commits, never before. (Measurements:
// docs/design/dbpubsub.md, "Notifier".)

// The spacing between the starts of two rounds starts at notifySpacing;
// while marks come within notifySpacing of the end of the last round, it
// doubles at each round, up to maxNotifySpacing, and it halves again at
// each round once they come less often.
const (
	notifySpacing    = time.Millisecond
	maxNotifySpacing = 16 * time.Millisecond
)

// maxNotifyMarks is the most marks one round takes (they name far fewer
// channels).
const maxNotifyMarks = 8192

// pacer spaces the notifier's rounds out; only the queue's one lane uses it.
type pacer struct {
	last, done time.Time // the start and the end of the last round
	spacing    time.Duration
}

func newNotifyQueue(ps *store) *batch.Queue[string] {
	p := &pacer{spacing: notifySpacing}
	return batch.New(ps.writers, batch.Options[string]{
		Lanes: 1,
		Max:   maxNotifyMarks,
		Pace:  p.pace,
		Handle: func(chans []string) {
			ps.notifyRound(chans)
			p.done = time.Now()
		},
	})
}

// pace waits until the next round may start.
func (p *pacer) pace(stop <-chan struct{}) {
	if time.Since(p.done) < notifySpacing {
		p.spacing = min(2*p.spacing, maxNotifySpacing) // the marks come fast
	} else {
		p.spacing = max(p.spacing/2, notifySpacing)
	}
	if wait := p.spacing - time.Since(p.last); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-stop:
		}
		t.Stop()
	}
	p.last = time.Now()
}

// A round's payload names the store that sent it (newSender), so that its
// own listener passes over it: the store's consumers were woken at the
// enqueue's commit (topicState.committed), and waking them again would cost
// a claim that finds nothing. Other stores and older versions read any
// payload but pause and resume as a wake-up.

// newSender returns a payload no other store's rounds carry: "w" and 16
// random hex digits.
func newSender() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return "w" + hex.EncodeToString(b[:])
}

// notifyLater marks the channel ch for the notifier's next round.
func (ps *store) notifyLater(ch string) { ps.notifies.Add(ch, 0) }

// notifyRound notifies each channel of marks once.
func (ps *store) notifyRound(marks []string) {
	seen := make(map[string]bool, 4)
	chans := make([]string, 0, 4)
	for _, ch := range marks {
		if !seen[ch] {
			seen[ch] = true
			chans = append(chans, ch)
		}
	}
	ctx, cancel := context.WithTimeout(ps.ctx, ps.opts.StatementTimeout)
	defer cancel()
	if _, err := ps.sqldb.ExecContext(ctx, ps.stmts.notify, chans, ps.sender); err != nil {
		// The consumers of other processes find the messages by polling.
		ps.opts.Logger.Warn("dbpubsub: notify consumers", slog.Int("channels", len(chans)), slog.Any("error", err))
	}
}
