package dbpubsub

import (
	"context"
	"log/slog"
	"time"
)

// PostgreSQL serialises the commits of transactions that NOTIFY (they take
// a database-wide lock at commit), so a NOTIFY in every enqueue caps
// concurrent producers at one commit at a time. An enqueue outside a
// caller's transaction therefore inserts without notifying, wakes this
// PubSub's own consumers at once, and leaves the NOTIFY to the notifier:
// one goroutine that sends the notifications of every topic marked since
// its last round, in one statement, and starts at most one round per
// notifySpacing (back to back, under load, its rounds took about 15% of
// the CPU, client and server, of concurrent single enqueues), or
// maxNotifySpacing under a steady stream. Other processes hear of a
// message within that and a round trip after its commit; if the process dies before, their poll finds it. An enqueue
// in a caller's transaction (WithTx, EnqueueTx) still notifies in the
// transaction, so that consumers wake when it commits, never before.

// notifyLater marks the channel ch for the notifier's next round.
func (ps *PubSub) notifyLater(ch string) {
	ps.notifyMu.Lock()
	ps.notifyPending[ch] = struct{}{}
	ps.notifyMu.Unlock()
	select {
	case ps.notifyKick <- struct{}{}:
	default: // a round is due already
	}
}

// notifySpacing is the least time between the starts of two rounds of the
// notifier; a mark made meanwhile waits for the next round. While marks
// come within notifySpacing of the end of the last round, the spacing
// doubles at each
// round, up to maxNotifySpacing, and it halves again at each round once
// they come less often. Under a steady stream of enqueues the consumers of
// other processes are mostly busy claiming anyway; rounds back to back,
// one per millisecond, cost batch enqueues of 100 from 8 producers about
// 10% of their rate (make bench's batch scenario, N=400,000: 0.77x the
// baseline with them, 0.90x without any notification).
const (
	notifySpacing    = time.Millisecond
	maxNotifySpacing = 4 * time.Millisecond
)

// notifyLoop sends the marked notifications until the PubSub closes, then
// sends the last ones.
func (ps *PubSub) notifyLoop() {
	defer ps.loops.Done()
	defer ps.notifyRound(ps.ctx) // canceled after Options.CloseTimeout
	pause := time.NewTimer(0)
	defer pause.Stop()
	var last, done time.Time // the start and the end of the last round
	spacing := notifySpacing
	for {
		select {
		case <-ps.notifyKick:
		case <-ps.closed:
			return
		}
		// A mark within notifySpacing of the last round's end (or made
		// during it): the marks come fast.
		if time.Since(done) < notifySpacing {
			spacing = min(2*spacing, maxNotifySpacing)
		} else {
			spacing = max(spacing/2, notifySpacing)
		}
		if wait := spacing - time.Since(last); wait > 0 {
			pause.Reset(wait)
			select {
			case <-pause.C:
			case <-ps.closed:
				return
			}
		}
		last = time.Now()
		ps.notifyRound(ps.ctx)
		done = time.Now()
	}
}

func (ps *PubSub) notifyRound(ctx context.Context) {
	ps.notifyMu.Lock()
	if len(ps.notifyPending) == 0 {
		ps.notifyMu.Unlock()
		return
	}
	chans := make([]string, 0, len(ps.notifyPending))
	for ch := range ps.notifyPending {
		chans = append(chans, ch)
	}
	clear(ps.notifyPending)
	ps.notifyMu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, ps.opts.StatementTimeout)
	defer cancel()
	if _, err := ps.sqldb.ExecContext(ctx, ps.stmts.notify, chans); err != nil {
		// The consumers of other processes find the messages by polling.
		ps.opts.Logger.Warn("dbpubsub: notify consumers", slog.Int("channels", len(chans)), slog.Any("error", err))
	}
}
