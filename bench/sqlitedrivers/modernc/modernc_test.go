package modernc_test

import (
	"database/sql"
	"testing"

	"github.com/conveyorgo/conveyor/bench/sqlitedrivers"
	_ "modernc.org/sqlite"
)

func BenchmarkModernc(b *testing.B) {
	sqlitedrivers.Run(b, func(path, sync string) (*sql.DB, error) {
		return sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous("+sync+")&_txlock=immediate")
	})
}
