package ncruces_test

import (
	"database/sql"
	"testing"

	"github.com/conveyorgo/conveyor/bench/sqlitedrivers"
	_ "github.com/ncruces/go-sqlite3/driver"
)

func BenchmarkNcruces(b *testing.B) {
	sqlitedrivers.Run(b, func(path, sync string) (*sql.DB, error) {
		return sql.Open("sqlite3", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous("+sync+")&_txlock=immediate")
	})
}
