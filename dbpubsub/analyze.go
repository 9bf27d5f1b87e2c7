package dbpubsub

import (
	"context"
	"sync/atomic"
)

// The message table of a new database starts empty: messages for now wait
// in the ready table, and claims move them into the message table. pgx
// prepares statements, and after five executions PostgreSQL keeps a
// generic plan until the table's statistics change; plans made while the
// table was nearly empty scan it whole. Autovacuum analyzes it a minute
// later at best, and on a new table a drain of 20,000 messages ran at
// 2,300 msgs/s instead of 6,000 meanwhile. Planning every execution
// instead cost ~0.3 ms per claim, which doubled the latency at 500 msgs/s.
//
// So a PubSub analyzes the message table itself while the table is young:
// when its claims have moved youngFirstAnalyze rows into it, then ten
// times as many, up to youngLastAnalyze. ANALYZE makes PostgreSQL drop the
// plans it kept, and the next ones see the table as it is. A table that
// holds ten times the rows already is left to autovacuum.
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
func (ps *PubSub) noteMoved(n int) {
	y := &ps.young
	moved := y.moved.Add(int64(n))
	at := y.next.Load()
	if at == 0 || moved < at || !y.running.CompareAndSwap(false, true) {
		return
	}
	ps.loops.Add(1) // called by a fetcher: the count is not zero
	go func() {
		defer ps.loops.Done()
		defer y.running.Store(false)
		y.next.Store(ps.analyzeYoung(at))
	}()
}

// analyzeYoung analyzes the message table unless it is established, and
// returns the moved count of the next analysis (0: none).
func (ps *PubSub) analyzeYoung(at int64) int64 {
	ctx, cancel := context.WithCancel(ps.ctx)
	defer cancel()
	go func() { // Close does not wait for an analysis
		select {
		case <-ps.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
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
		_, err = ps.sqldb.ExecContext(ctx, "ANALYZE "+table)
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
