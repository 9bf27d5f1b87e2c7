package sqlitepubsub

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/engine"
)

// pkg starts every error of the package.
const pkg = "sqlitepubsub"

// DefaultBusyTimeout is the busy_timeout of the connections OpenDB makes:
// how long SQLite waits for another connection's write lock before a
// statement fails with SQLITE_BUSY. The PubSub's own calls wait on, until
// their ctx ends (ErrBusy); the app's statements on the DB fail after it.
const DefaultBusyTimeout = 5 * time.Second

// PubSub is the SQLite backend: conveyor's engine over the tables of one
// SQLite file. Create it with New or Open; stop it with Close. It is safe
// for concurrent use, and any number of PubSubs, in any number of
// processes, can share one file.
type PubSub struct {
	*engine.PubSub
	s     *store
	owned bool // Open made the DB: Close closes it
}

var (
	_ pubsub.PubSub     = (*PubSub)(nil)
	_ pubsub.Subscriber = (*PubSub)(nil)
	_ admin.TopicLister = (*PubSub)(nil)
)

// New returns a PubSub storing its messages in db, a SQLite database (its
// dialect sqlitedialect; OpenDB makes one), or an error naming the first
// field of opts that makes no sense. It does not touch the file: the first
// call creates the tables (Migrate). db stays the caller's: Close does not
// close it. Its connections should be in WAL mode with a busy timeout, as
// OpenDB's are; Options.Synchronous applies only to OpenDB's.
func New(db *bun.DB, opts Options) (*PubSub, error) { return newObserved(db, opts, nil) }

func newObserved(db *bun.DB, opts Options, observe func(*engine.PubSub) engine.Observer) (*PubSub, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: New: nil *bun.DB", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newStore(db, o)
	e, err := engine.New(s, engine.Options{
		Name: pkg, Retry: o.Retry, Lease: o.Lease, MaxDataSize: o.MaxDataSize, OnFailure: o.OnFailure, Observe: observe,
	})
	if err != nil {
		return nil, err
	}
	return &PubSub{PubSub: e, s: s}, nil
}

// Open opens (creating it if missing) the SQLite file at path with
// OpenDB and returns a PubSub on it, which closes the file on Close. It
// creates the tables (Migrate) on the first call.
func Open(path string, opts Options) (*PubSub, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := OpenDB(path, o.Synchronous)
	if err != nil {
		return nil, err
	}
	ps, err := New(db, opts)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	ps.owned = true
	return ps, nil
}

// OpenDB opens the SQLite file at path (created if missing) as a *bun.DB
// for sqlitepubsub and for the app's own tables: modernc.org/sqlite (pure
// Go) and bun's sqlitedialect; every connection in WAL mode (readers never
// wait for the writer), with synchronous set to synchronous ("" means
// DefaultSynchronous), a busy timeout of DefaultBusyTimeout, foreign keys
// on, and transactions begun IMMEDIATE (a transaction that writes never
// fails halfway for a lock another took meanwhile). It does not touch the
// file; the first query does. The caller closes it, after the PubSubs on
// it.
func OpenDB(path, synchronous string) (*bun.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("%w: OpenDB: path %q: want the path of a file, without ? or #", ErrInvalidOptions, path)
	}
	o, err := Options{Synchronous: synchronous}.withDefaults()
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous("+o.Synchronous+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", pkg, path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// DB returns the *bun.DB the PubSub stores its messages in.
func (ps *PubSub) DB() *bun.DB { return ps.s.db }

// Migrate creates or upgrades the tables now (see the function Migrate),
// rather than on the first call.
func (ps *PubSub) Migrate(ctx context.Context) error { return ps.s.ready(ctx) }

// Close stops the PubSub: every topic handle returns pubsub.ErrClosed
// from then on, blocked calls return, and the goroutines it started have
// ended when Close returns. Deliveries in hand can no longer be settled
// here and come back when their lease runs out. The DB is closed when
// Open made it. A second Close returns pubsub.ErrClosed.
func (ps *PubSub) Close() error {
	err := ps.PubSub.Close()
	if ps.owned && err == nil {
		err = ps.s.db.Close()
	}
	return err
}

// Shutdown closes ps, as Close does; it lets a dependency injector stop
// it.
func (ps *PubSub) Shutdown(context.Context) error { return ps.Close() }

// Rescue hands out again now the messages whose lease ran out, of every
// topic and process. Every PubSub runs it every Options.RescueInterval.
func (ps *PubSub) Rescue(ctx context.Context) error { return ps.s.rescue(ctx) }

// Prune deletes now the acked and dead messages past their retention.
// Every PubSub runs it every Options.PruneInterval.
func (ps *PubSub) Prune(ctx context.Context) error { return ps.s.prune(ctx) }
