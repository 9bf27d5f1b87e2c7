package sqlitepubsub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors of the package. Each wraps the SQLite error it stands for, so
// that its message names the cause.
var (
	// ErrInvalidOptions is wrapped by the error of New, Open and Register
	// for an option that makes no sense; the message names the field.
	ErrInvalidOptions = errors.New("sqlitepubsub: invalid options")
	// ErrBusy is wrapped by the error of a call whose ctx ended while
	// another connection (another process, or a transaction of the app)
	// held the file's write lock: nothing was written.
	ErrBusy = errors.New("sqlitepubsub: the database file is locked by another connection")
	// ErrNotDatabase is wrapped when the file is not a SQLite database
	// (or is encrypted): nothing was written to it.
	ErrNotDatabase = errors.New("sqlitepubsub: the file is not a SQLite database")
	// ErrCorrupt is wrapped when SQLite finds the file corrupt.
	ErrCorrupt = errors.New("sqlitepubsub: the database file is corrupt")
	// ErrReadOnly is wrapped when the file, or its directory (where SQLite
	// keeps the WAL), cannot be written.
	ErrReadOnly = errors.New("sqlitepubsub: the database file is read-only")
	// ErrCannotOpen is wrapped when SQLite cannot open the file (a
	// missing directory, no permission to read it).
	ErrCannotOpen = errors.New("sqlitepubsub: cannot open the database file")
	// ErrFull is wrapped when the disk (or the file's max_page_count) is
	// full: the statement was rolled back, nothing half-written.
	ErrFull = errors.New("sqlitepubsub: the database or disk is full")
	// ErrForeignSchema is wrapped when the file has tables named as
	// sqlitepubsub's that it did not make (no conveyor_migrations table),
	// or a schema version newer than this package knows.
	ErrForeignSchema = errors.New("sqlitepubsub: the file's conveyor tables are not this package's")
	// ErrNotMigrated is wrapped by Verify's error for a file without this
	// package's tables, or with older ones (a PubSub makes them on its
	// first call).
	ErrNotMigrated = errors.New("sqlitepubsub: the file does not have sqlitepubsub's tables (yet)")
	// ErrOtherDatabase is wrapped, beside pubsub.ErrUnsupported, by an
	// enqueue in a transaction (pubsub.WithTx) that is not on the PubSub's
	// database file.
	ErrOtherDatabase = errors.New("sqlitepubsub: the transaction is not on the PubSub's database file")
)

// code returns the primary SQLite result code of err, 0 if err is not an
// error of the driver.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

func isBusy(err error) bool {
	c := code(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// classify wraps err, an error of the driver, with the sentinel of its
// cause; ctx's error first when ctx has ended.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch code(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		sentinel = ErrBusy
	case sqlite3.SQLITE_NOTADB:
		sentinel = ErrNotDatabase
	case sqlite3.SQLITE_CORRUPT:
		sentinel = ErrCorrupt
	case sqlite3.SQLITE_READONLY:
		sentinel = ErrReadOnly
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		sentinel = ErrCannotOpen
	case sqlite3.SQLITE_FULL:
		sentinel = ErrFull
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		if sentinel != nil {
			return fmt.Errorf("%w: %w (%w)", cerr, sentinel, err)
		}
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}
