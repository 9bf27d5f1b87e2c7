//go:build cgo

// The cgo driver: measured only where cgo builds (a C toolchain).
package mattn_test

import (
	"database/sql"
	"testing"

	"github.com/conveyorgo/conveyor/bench/sqlitedrivers"
	_ "github.com/mattn/go-sqlite3"
)

func BenchmarkMattn(b *testing.B) {
	sqlitedrivers.Run(b, func(path, sync string) (*sql.DB, error) {
		return sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000&_synchronous="+sync+"&_txlock=immediate")
	})
}
