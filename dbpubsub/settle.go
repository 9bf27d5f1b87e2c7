package dbpubsub

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/conveyorgo/conveyor/pubsub"
)

// settlers is how many settle statements may be in flight at once: while
// one waits for its commit, the next group is sent, and PostgreSQL flushes
// concurrent commits together. (Measured on a loaded 2-core machine, 1, 2
// and 4 were within the noise of each other.)
const settlers = 2

// maxSettleBatch is the most settles grouped into one statement.
const maxSettleBatch = 512

// settleReq asks the settler to change one delivered row.
type settleReq struct {
	id, token int64
	status    string
	delay     int64 // µs, for status pending
	reason    string
	done      chan error
}

// settle runs r in the next grouped statement and returns once it is
// committed: nil, an error wrapping pubsub.ErrLeaseExpired when the
// delivery no longer holds the row, or the statement's error. If ctx ends
// before r is handed to a statement, it returns ctx's error and nothing was
// changed; once handed over, r's outcome is awaited (see PubSub.write).
func (ps *PubSub) settle(ctx context.Context, r *settleReq) error {
	if err := ps.begin(); err != nil {
		return err
	}
	defer ps.end()
	r.done = make(chan error, 1)
	select {
	case ps.settleCh <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// settleLoop groups the settles that arrive while a statement runs into
// the next statement: one round trip and one commit for many acks and
// nacks, without waiting when there is only one.
func (ps *PubSub) settleLoop() {
	defer ps.settler.Done()
	batch := make([]*settleReq, 0, maxSettleBatch)
	for {
		select {
		case r := <-ps.settleCh:
			batch = append(batch[:0], r)
		case <-ps.settleStop:
			return
		}
	more:
		for len(batch) < maxSettleBatch {
			select {
			case r := <-ps.settleCh:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ps.execSettle(batch)
	}
}

type idToken struct{ id, token int64 }

func (ps *PubSub) execSettle(batch []*settleReq) {
	// Lock rows in id order, so that two statements never wait for each
	// other's rows in opposite orders.
	slices.SortFunc(batch, func(a, b *settleReq) int { return cmp.Compare(a.id, b.id) })
	n := len(batch)
	ids, tokens, delays := make([]int64, n), make([]int64, n), make([]int64, n)
	statuses, reasons := make([]string, n), make([]string, n)
	for i, r := range batch {
		ids[i], tokens[i], statuses[i], delays[i], reasons[i] = r.id, r.token, r.status, r.delay, r.reason
	}
	done := make(map[idToken]bool, n)
	ctx, cancel := context.WithTimeout(ps.ctx, ps.opts.StatementTimeout)
	defer cancel()
	err := func() error {
		rows, err := ps.sqldb.QueryContext(ctx, ps.stmts.settle, ids, tokens, statuses, delays, reasons)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k idToken
			if err := rows.Scan(&k.id, &k.token); err != nil {
				return err
			}
			done[k] = true
		}
		return rows.Err()
	}()
	for _, r := range batch {
		switch {
		case err != nil:
			r.done <- err
		case done[idToken{r.id, r.token}]:
			r.done <- nil
		default:
			r.done <- fmt.Errorf("%w: the row is no longer leased to this delivery", pubsub.ErrLeaseExpired)
		}
	}
}
