package reliability

import (
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/pubsub"
)

// config is what a test asks of the backend it gets.
type config struct {
	Lease       time.Duration
	Retry       pubsub.RetryPolicy
	MaxDataSize int
	Capacity    int // channelpubsub only
}

// store is a fresh backend: its PubSub, and for dbpubsub its DB.
type store struct {
	ps pubsub.PubSub
	db *bun.DB // nil for channelpubsub
	// reopen returns another PubSub on the same messages (channelpubsub:
	// the same PubSub, as messages live in it).
	reopen func(t testing.TB) pubsub.PubSub
}

type backend struct {
	name string
	new  func(t testing.TB, c config) store
}

// backends are the backends the shared tests run on.
var backends = []backend{
	{name: "channelpubsub", new: func(t testing.TB, c config) store {
		ps, err := channelpubsub.NewWithOptions(channelpubsub.Options{
			Capacity: c.Capacity, Retry: c.Retry, Lease: c.Lease, MaxDataSize: c.MaxDataSize,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		return store{ps: ps, reopen: func(testing.TB) pubsub.PubSub { return ps }}
	}},
	dbBackend("dbpubsub", false),
	dbBackend("dbpubsub-confirmack", true),
}

// dbBackend is dbpubsub with its default acks (queued, written in groups)
// or with Options.ConfirmAck (each Ack returns once committed).
func dbBackend(name string, confirmAck bool) backend {
	return backend{name: name, new: func(t testing.TB, c config) store {
		_, db := newStore(t)
		opts := func() dbpubsub.Options {
			o := quietOptions(c.Lease)
			if c.Lease == 0 {
				o.RescueInterval = 0
			}
			o.Retry, o.MaxDataSize = c.Retry, c.MaxDataSize
			o.PollInterval = 50 * time.Millisecond
			o.ConfirmAck = confirmAck
			return o
		}
		ps := newPubSub(t, db, opts())
		return store{ps: ps, db: db, reopen: func(t testing.TB) pubsub.PubSub { return newPubSub(t, db, opts()) }}
	}}
}

// eachBackend runs f as a parallel subtest per backend.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}
