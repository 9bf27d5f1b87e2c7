package sqlitepubsub

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
)

// WithTx returns a copy of ctx that makes every enqueue called with it run
// inside tx, the caller's transaction on the PubSub's file (a bun.Tx or
// a *sql.Tx): the messages exist exactly when the caller's writes commit.
// It is pubsub.WithTx, typed. Consumers of any process find them within
// Options.PollInterval of the commit.
func WithTx(ctx context.Context, tx bun.IDB) context.Context { return pubsub.WithTx(ctx, tx) }

// txOf returns the database/sql transaction under v, the caller's
// transaction (pubsub.WithTx), once it has checked that it is on the
// store's file. A transaction of another type, driver or file is an error
// wrapping pubsub.ErrUnsupported and ErrOtherDatabase.
func (s *store) txOf(ctx context.Context, v any) (*sql.Tx, error) {
	var tx *sql.Tx
	switch t := v.(type) {
	case *sql.Tx:
		tx = t
	case bun.Tx:
		tx = t.Tx
	case *bun.Tx:
		tx = t.Tx
	default:
		return nil, fmt.Errorf("cannot enqueue in a transaction of type %T, want a bun.Tx or *sql.Tx on the PubSub's file: %w", v, pubsub.ErrUnsupported)
	}
	want, err := s.file(ctx)
	if err != nil {
		return nil, err
	}
	var got string
	if err := tx.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&got); err != nil {
		if ctx.Err() != nil {
			return nil, classify(ctx, err)
		}
		return nil, fmt.Errorf("%w: %w: the transaction's database does not answer as SQLite (%w)", pubsub.ErrUnsupported, ErrOtherDatabase, err)
	}
	if got != want || want == "" {
		return nil, fmt.Errorf("%w: %w: the transaction is on %q, the PubSub on %q", pubsub.ErrUnsupported, ErrOtherDatabase, got, want)
	}
	if !s.migrated.Load() {
		// The tables are made in the caller's transaction, which may
		// hold the write lock already: a migration of the store's own
		// would wait for it. They exist for good once it commits.
		ran, err := migrateIn(ctx, tx)
		if err != nil {
			return nil, classify(ctx, err)
		}
		if !ran {
			s.migrated.Store(true)
		}
	}
	return tx, nil
}

// file returns the path of the store's database file, as SQLite names it.
func (s *store) file(ctx context.Context) (string, error) {
	if p := s.path.Load(); p != nil {
		return *p, nil
	}
	var p string
	if err := s.sqldb.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&p); err != nil {
		return "", classify(ctx, err)
	}
	s.path.Store(&p)
	return p, nil
}
