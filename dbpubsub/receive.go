package dbpubsub

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// A topicState is the store's side of one subscription
// (driver.Subscription): Receive here, the settles in settle.go, the
// optional capabilities in admin.go, inspect.go, pause.go, ackcount.go
// and inbox.go.
var (
	_ driver.Subscription = (*topicState)(nil)
	_ driver.SlotReceiver = (*topicState)(nil)
	_ driver.DeadLetters  = (*topicState)(nil)
	_ driver.Stater       = (*topicState)(nil)
	_ driver.Peeker       = (*topicState)(nil)
	_ driver.Canceler     = (*topicState)(nil)
	_ driver.DeadDeleter  = (*topicState)(nil)
	_ driver.Pauser       = (*topicState)(nil)
	_ driver.AckCounter   = (*topicState)(nil)
	_ driver.Inbox        = (*topicState)(nil)
)

// ReceiveSlot blocks until a row of the subscription is claimed for the
// caller (fetcher.go), ctx ends, or stop is closed. While the database
// cannot be reached it keeps trying, logging the errors, until ctx ends.
// A schema that is not migrated is an error at once. Each delivery is the
// Slot inside its claimed row's delivery.
func (st *topicState) ReceiveSlot(ctx context.Context, stop <-chan struct{}) (*driver.Slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := st.consume(ctx); err != nil {
		if errors.Is(err, pubsub.ErrNoSubscription) || errors.Is(err, migrations.ErrNotMigrated) {
			return nil, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		// The database is unreachable: the fetcher keeps trying.
	}
	st.start()
	for {
		d, w := st.take()
		if w != nil {
			st.poke()
			select {
			case d = <-w.ch:
			case <-ctx.Done():
				st.leave(w)
				return nil, ctx.Err()
			case <-stop:
				st.leave(w)
				return nil, pubsub.ErrClosed
			case <-st.ps.done():
				st.leave(w)
				return nil, pubsub.ErrClosed
			}
		}
		if d == goneDelivery {
			return nil, pubsub.ErrNoSubscription
		}
		if st.handOut(ctx, d) {
			return &d.slot, nil
		}
	}
}

// Receive is ReceiveSlot filling d.
func (st *topicState) Receive(ctx context.Context, stop <-chan struct{}, d *driver.Delivery) error {
	s, err := st.ReceiveSlot(ctx, stop)
	if err != nil {
		return err
	}
	*d = s.Delivery
	return nil
}

// delivery is a row claimed for a consumer of this store; handed out, it
// is the Ref of its driver.Delivery.
type delivery struct {
	slot    driver.Slot // handed to the engine (handOut)
	id      int64
	data    []byte
	header  pubsub.Header // nil if none
	attempt int
	token   int64
	runAt   time.Time
	leased  time.Time // when the lease was last set (local clock); guarded by topicState.mu while buffered
	fence   fence     // settle.go
}

var _ driver.IDAppender = (*delivery)(nil)

// ID returns the row's id.
func (d *delivery) ID() string { return strconv.FormatInt(d.id, 10) }

// AppendID appends the row's id to b.
func (d *delivery) AppendID(b []byte) []byte { return strconv.AppendInt(b, d.id, 10) }

// fill makes d's slot the delivery of its row.
func (d *delivery) fill() {
	d.slot.Delivery = driver.Delivery{Msg: d, Token: uint64(d.token), Data: d.data, Header: d.header, Attempt: d.attempt}
}
