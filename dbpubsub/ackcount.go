package dbpubsub

import (
	"context"
	"fmt"
	"time"
)

// AckedSince counts the subscription's rows acked at or after since (see
// admin.AckCounter), by every process on the database: the finished rows
// whose finished_at, the database's now() when the ack was written, is
// not before since. The acks this PubSub queued before the call (see
// Options.ConfirmAck) are written first; a queued ack that could not be
// written left its row unfinished and is not counted. Finished rows are
// kept for Options.Retention (DefaultRetention, 24 hours) and then pruned
// (every Options.PruneInterval, by any process that prunes), so a since
// older than that counts only the rows still kept.
//
// It is one count served by the finished index (finished_at, for status
// 'finished'), which is not by topic: a recent since reads the rows that
// every topic finished since then, a since far back every finished row
// kept.
func (st *topicState) AckedSince(ctx context.Context, since time.Time) (int64, error) {
	ctx, cancel := st.ps.stmtCtx(ctx)
	defer cancel()
	ps := st.ps
	if err := ps.Flush(ctx); err != nil {
		return 0, err
	}
	if _, err := ps.qualifiedTable(ctx); err != nil {
		return 0, fmt.Errorf("since %s: %w", since.Format(time.RFC3339Nano), err)
	}
	var n int64
	err := ps.db.NewRaw(`SELECT count(*) FROM ? WHERE status = 'finished' AND finished_at >= ? AND topic = ?`,
		ps.table(), since, st.name).Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("since %s: %w", since.Format(time.RFC3339Nano), err)
	}
	return n, nil
}
