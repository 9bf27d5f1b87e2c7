package dbpubsub

import (
	"context"
	"fmt"
	"time"
)

// rescueBatch is the most expired leases one rescue statement handles.
const rescueBatch = 1000

// every runs f every d until the PubSub closes, logging its failures; the
// rescue and pruning loops.
func (ps *PubSub) every(d time.Duration, what string, f func(context.Context) error) {
	defer ps.loops.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ps.closed:
			return
		}
		if err := f(ps.ctx); err != nil && !ps.closing() {
			ps.opts.Logger.Warn("dbpubsub: "+what+" failed", "error", err)
		}
	}
}

// Rescue makes the messages whose lease ran out (on every topic of the
// table) ready again at once, counting the attempt they used, or dead when
// their attempts are exhausted by this PubSub's retry policy. It returns the
// topics that got messages back. Every PubSub runs it periodically; call it
// to rescue now.
func (ps *PubSub) Rescue(ctx context.Context) ([]string, error) {
	q, err := ps.qualifiedTable(ctx)
	if err != nil {
		return nil, err
	}
	var topics []string
	for {
		rows, err := ps.sqldb.QueryContext(ctx, ps.stmts.rescue, rescueBatch, ps.opts.Retry.MaxAttempts, channelPrefix, q)
		if err != nil {
			return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
		}
		handled := 0
		for rows.Next() {
			var name string
			var n int
			var pending bool
			if err := rows.Scan(&name, &n, &pending); err != nil {
				rows.Close()
				return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
			}
			handled += n
			if pending {
				topics = append(topics, name)
				ps.wakeLocal(name)
			}
		}
		if err := rows.Close(); err != nil {
			return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
		}
		if handled < rescueBatch {
			return topics, nil
		}
		// A full batch: more leases may have run out.
	}
}

// Prune deletes the finished (acked) rows older than Options.Retention, of
// every topic, in batches of DefaultPruneBatch, and says how many it
// deleted. Every PubSub runs it every Options.PruneInterval.
func (ps *PubSub) Prune(ctx context.Context) (int64, error) {
	var total int64
	for {
		res, err := ps.sqldb.ExecContext(ctx, ps.stmts.prune, ps.opts.Retention.Microseconds(), DefaultPruneBatch)
		if err != nil {
			return total, fmt.Errorf("dbpubsub: prune: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("dbpubsub: prune: %w", err)
		}
		total += n
		if n < DefaultPruneBatch {
			return total, nil
		}
		select {
		case <-ps.closed:
			return total, nil
		default:
		}
	}
}
