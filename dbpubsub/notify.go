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
// the CPU, client and server, of concurrent single enqueues). Other
// processes hear of a message within notifySpacing and a round trip after
// its commit; if the process dies before, their poll finds it. An enqueue
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
// notifier. A mark made meanwhile waits for the next round.
const notifySpacing = time.Millisecond

// notifyLoop sends the marked notifications until the PubSub closes, then
// sends the last ones.
func (ps *PubSub) notifyLoop() {
	defer ps.loops.Done()
	defer ps.notifyRound(ps.ctx) // canceled after Options.CloseTimeout
	pause := time.NewTimer(0)
	defer pause.Stop()
	var last time.Time
	for {
		select {
		case <-ps.notifyKick:
		case <-ps.closed:
			return
		}
		if wait := notifySpacing - time.Since(last); wait > 0 {
			pause.Reset(wait)
			select {
			case <-pause.C:
			case <-ps.closed:
				return
			}
		}
		last = time.Now()
		ps.notifyRound(ps.ctx)
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
