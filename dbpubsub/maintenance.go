package dbpubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/conveyorgo/conveyor/internal/service"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// Maintenance every PubSub does in the background: it rescues the messages
// whose lease ran out, prunes finished and dead rows past their retention, and
// analyzes the message table while it is young and whenever its statistics
// are stale.

// rescueBatch is the most expired leases one rescue statement handles.
const rescueBatch = 1000

// pruneBatch is the most rows one pruning statement deletes.
const pruneBatch = 1000

// every returns the loop that runs f every d until stop, logging its
// failures: the rescuer and the pruner.
func (ps *store) every(d time.Duration, what string, f func(context.Context) error) func(stop <-chan struct{}) {
	return func(stop <-chan struct{}) {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-stop:
				return
			}
			if err := f(ps.ctx); err != nil && !ps.closing() {
				ps.opts.Logger.Warn("dbpubsub: "+what+" failed", "error", err)
			}
		}
	}
}

// Rescue is PubSub.Rescue.
func (ps *store) Rescue(ctx context.Context) ([]string, error) {
	q, err := ps.qualifiedTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("dbpubsub: rescue: %w", err)
	}
	var topics []string
	for {
		sctx, cancel := ps.stmtCtx(ctx)
		rows, err := ps.sqldb.QueryContext(sctx, ps.stmts.rescue, rescueBatch, ps.opts.Retry.MaxAttempts, channelPrefix, q)
		if err != nil {
			cancel()
			return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
		}
		handled := 0
		for rows.Next() {
			var name string
			var n int
			var pending bool
			var dead sql.NullString
			if err := rows.Scan(&name, &n, &pending, &dead); err != nil {
				rows.Close()
				cancel()
				return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
			}
			handled += n
			if dead.Valid {
				ps.reportLeaseDead(name, dead.String)
			}
			if pending {
				topics = append(topics, name)
				ps.wakeLocal(name)
			}
		}
		err = rows.Close()
		cancel()
		if err != nil {
			return topics, fmt.Errorf("dbpubsub: rescue: %w", err)
		}
		if handled < rescueBatch {
			return topics, nil
		}
		// A full batch: more leases may have run out.
	}
}

// Prune is PubSub.Prune.
func (ps *store) Prune(ctx context.Context) (int64, error) {
	total, err := ps.pruneRows(ctx, ps.stmts.prune, ps.opts.Retention, "finished")
	if err != nil || ps.closing() {
		return total, err
	}
	if ps.opts.DeadRetention >= 0 {
		n, err := ps.pruneRows(ctx, ps.stmts.pruneDead, ps.opts.DeadRetention, "dead")
		total += n
		if err != nil || ps.closing() {
			return total, err
		}
	}
	return total, ps.pruneInbox(ctx)
}

// pruneRows runs stmt, which deletes up to pruneBatch rows older than
// retention, until it deletes fewer, and says how many it deleted.
func (ps *store) pruneRows(ctx context.Context, stmt string, retention time.Duration, what string) (int64, error) {
	var total int64
	for {
		sctx, cancel := ps.stmtCtx(ctx)
		res, err := ps.sqldb.ExecContext(sctx, stmt, retention.Microseconds(), pruneBatch)
		cancel()
		if err != nil {
			return total, fmt.Errorf("dbpubsub: prune %s rows: %w", what, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("dbpubsub: prune %s rows: %w", what, err)
		}
		total += n
		if n < pruneBatch || ps.closing() {
			return total, nil
		}
	}
}

// pruneInbox deletes the inbox claims older than Options.Retention.
func (ps *store) pruneInbox(ctx context.Context) error {
	for {
		sctx, cancel := ps.stmtCtx(ctx)
		res, err := ps.sqldb.ExecContext(sctx, ps.stmts.pruneInbox, ps.opts.Retention.Microseconds(), pruneBatch)
		cancel()
		if err != nil {
			return fmt.Errorf("dbpubsub: %w", notMigrated(ps, err, "prune the inbox"))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("dbpubsub: prune the inbox: %w", err)
		}
		if n < pruneBatch || ps.closing() {
			return nil
		}
	}
}

// The message table of a new database starts empty: messages for now wait
// in the ready table, and claims move them into the message table. The
// plans PostgreSQL keeps for prepared statements while the table is nearly
// empty scan it whole, and autovacuum analyzes it a minute later at best.
// So a PubSub analyzes the message table itself while the table is young:
// when its claims have moved youngFirstAnalyze rows into it, then ten times
// as many, up to youngLastAnalyze. ANALYZE makes PostgreSQL drop the plans
// it kept. A table that holds ten times the rows already is left to
// autovacuum. (Measurements: docs/design/dbpubsub.md, "Plans".)
const (
	youngFirstAnalyze = 1_000
	youngLastAnalyze  = 100_000
)

// youngTable is the state of the analyses of the message table.
type youngTable struct {
	moved   atomic.Int64 // rows this PubSub's claims moved into the table
	next    atomic.Int64 // moved count of the next analysis; 0: none
	running atomic.Bool
}

// noteMoved counts n rows moved into the message table by a claim, and
// starts an analysis when one is due.
func (ps *store) noteMoved(n int) {
	y := &ps.young
	moved := y.moved.Add(int64(n))
	at := y.next.Load()
	if at == 0 || moved < at || !y.running.CompareAndSwap(false, true) {
		return
	}
	if !ps.loops.Go(func(stop <-chan struct{}) {
		defer y.running.Store(false)
		y.next.Store(ps.analyzeYoung(stop, at))
	}) {
		y.running.Store(false)
	}
}

// analyzeYoung analyzes the message table unless it is established, and
// returns the moved count of the next analysis (0: none). Close does not
// wait for an analysis: stop cancels it.
func (ps *store) analyzeYoung(stop <-chan struct{}, at int64) int64 {
	sctx, cancel := service.Context(stop)
	defer cancel()
	ctx, cancel := ps.stmtCtx(sctx) // one deadline for the look and the ANALYZE: ANALYZE samples, it is quick
	defer cancel()
	next := at * 10
	if next > youngLastAnalyze {
		next = 0
	}
	table := quoteIdent(ps.opts.Table)
	var tuples float64
	err := ps.sqldb.QueryRowContext(ctx, `SELECT reltuples FROM pg_catalog.pg_class WHERE oid = to_regclass($1)`, table).Scan(&tuples)
	if err == nil && tuples >= float64(10*at) {
		return 0 // established: autovacuum keeps its statistics
	}
	if err == nil {
		err = ps.analyze(ctx)
	}
	if err != nil {
		if !ps.closing() {
			ps.opts.Logger.Debug("dbpubsub: analyzing the young message table failed; autovacuum will",
				"table", ps.opts.Table, "error", err)
		}
		return 0
	}
	return next
}

// PostgreSQL keeps the plans of prepared statements until the table's
// statistics change, and plans made while the message table was small scan
// it whole once it has grown (rows enqueued for later, settled or dead go
// into it without a claim counting them). So a PubSub also analyzes the
// table, at start and every staleCheckInterval, when the server counts more
// rows changed since the last analysis (by every process) than the table
// then held, and at least staleMinChanges. Autovacuum, when it keeps up,
// analyzes long before. (Measurements: docs/design/dbpubsub.md, "Plans on
// stale statistics".)
const (
	staleCheckInterval = time.Second
	staleMinChanges    = 10_000
)

// analyzeStaleSQL says whether the message table $1 is due for an analysis
// and whether this role owns it (only the owner may ANALYZE).
const analyzeStaleSQL = `SELECT pg_catalog.pg_stat_get_mod_since_analyze(c.oid) >= greatest($2, c.reltuples),
		pg_catalog.pg_has_role(c.relowner, 'USAGE')
	FROM pg_catalog.pg_class c WHERE c.oid = to_regclass($1)`

// analyzeStale is the loop that analyzes the message table when its
// statistics are stale: at start, then every staleCheckInterval.
func (ps *store) analyzeStale(stop <-chan struct{}) {
	check := func(ctx context.Context) error {
		if err := ps.analyzeIfStale(ctx); err != nil && !ps.closing() {
			ps.opts.Logger.Debug("dbpubsub: analyzing the message table failed; autovacuum will",
				"table", ps.opts.Table, "error", err)
		}
		return nil
	}
	_ = check(ps.ctx)
	ps.every(staleCheckInterval, "analysis of the message table", check)(stop)
}

// analyzeIfStale analyzes the message table when its statistics are stale
// (see staleCheckInterval), unless an analysis runs already or the role
// does not own the table.
func (ps *store) analyzeIfStale(ctx context.Context) error {
	y := &ps.young
	if !y.running.CompareAndSwap(false, true) {
		return nil
	}
	defer y.running.Store(false)
	ctx, cancel := ps.stmtCtx(ctx)
	defer cancel()
	table := quoteIdent(ps.opts.Table)
	var stale, owner bool
	err := ps.sqldb.QueryRowContext(ctx, analyzeStaleSQL, table, staleMinChanges).Scan(&stale, &owner)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (!stale || !owner) {
		return nil // not migrated yet, up to date, or autovacuum's business
	}
	if err == nil {
		err = ps.analyze(ctx)
	}
	return err
}

// analyzeTarget is the statistics target of the PubSub's own analyses of
// the message table: they are there to make PostgreSQL plan again on the
// table's real size, which a sample of 300 × analyzeTarget rows tells as
// well as the default target's 30,000, at an eighth of the time on a table
// of 20,000 rows (docs/design/dbpubsub.md, "ANALYZE of the young message
// table"). Autovacuum's and an operator's analyses use the server's target
// and replace these statistics.
const analyzeTarget = 10

// analyze analyzes the message table with analyzeTarget, in a transaction
// of its own so that the setting ends with it.
func (ps *store) analyze(ctx context.Context) error {
	tx, err := ps.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL default_statistics_target = %d", analyzeTarget)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "ANALYZE "+quoteIdent(ps.opts.Table)); err != nil {
		return err
	}
	return tx.Commit()
}

// reportLeaseDead reports the messages of queue name that the rescue made
// dead ("id:attempts,...", see statements.rescue).
func (ps *store) reportLeaseDead(name, dead string) {
	topic, sub, ok := strings.Cut(name, queueSep)
	if !ok {
		sub = pubsub.DefaultSubscription
	}
	for _, row := range strings.Split(dead, ",") {
		idText, attText, _ := strings.Cut(row, ":")
		id, err1 := strconv.ParseInt(idText, 10, 64)
		attempt, err2 := strconv.Atoi(attText)
		if err1 == nil && err2 == nil {
			ps.reportDead(topic, sub, id, attempt, pubsub.LeaseExpired, driver.ReasonLeaseExpired)
		}
	}
}
