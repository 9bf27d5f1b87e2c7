// Package sqlitedrivers measures the SQLite drivers sqlitepubsub could sit
// on (docs/design/sqlitepubsub.md): enqueue, one row per transaction, in a
// WAL file at synchronous=FULL and NORMAL, and a claim+ack drain. Each
// driver registers its own database/sql name (two of them "sqlite3"), so
// each runs in a test binary of its own: the packages beside this one.
package sqlitedrivers

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Open opens a fresh WAL file in dir through driverName, with the DSN
// suffix pragmas (each driver spells them its own way).
type Open func(path, synchronous string) (*sql.DB, error)

const schema = `CREATE TABLE q (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	topic TEXT NOT NULL,
	state INTEGER NOT NULL DEFAULT 0,
	due INTEGER NOT NULL,
	lease INTEGER NOT NULL DEFAULT 0,
	attempt INTEGER NOT NULL DEFAULT 0,
	data BLOB NOT NULL
);
CREATE INDEX q_ready ON q (topic, state, due, id);`

func setup(b *testing.B, open Open, sync string) *sql.DB {
	db, err := open(filepath.Join(b.TempDir(), "q.db"), sync)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		b.Fatalf("journal_mode %q, %v", mode, err)
	}
	var s int
	if err := db.QueryRow("PRAGMA synchronous").Scan(&s); err != nil {
		b.Fatal(err)
	}
	if want := map[string]int{"FULL": 2, "NORMAL": 1}[sync]; s != want {
		b.Fatalf("synchronous %d, want %d (%s)", s, want, sync)
	}
	if _, err := db.Exec(schema); err != nil {
		b.Fatal(err)
	}
	return db
}

func enqueue(ctx context.Context, db *sql.DB, data []byte) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO q (topic, due, data) VALUES ('t', ?, ?)`, time.Now().UnixMicro(), data); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Enqueue measures one INSERT per transaction.
func Enqueue(b *testing.B, open Open, sync string) {
	db := setup(b, open, sync)
	ctx := context.Background()
	data := make([]byte, 100)
	b.ResetTimer()
	for b.Loop() {
		if err := enqueue(ctx, db, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// Drain measures a claim (UPDATE … RETURNING of the oldest due row) and
// an ack (DELETE), each its own transaction, over a backlog of b.N rows
// inserted before the timer starts.
func Drain(b *testing.B, open Open, sync string) {
	db := setup(b, open, sync)
	ctx := context.Background()
	data := make([]byte, 100)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if _, err := tx.Exec(`INSERT INTO q (topic, due, data) VALUES ('t', 0, ?)`, data); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		now := time.Now().UnixMicro()
		var id int64
		var got []byte
		err := db.QueryRowContext(ctx, `UPDATE q SET state = 1, lease = ?, attempt = attempt + 1
			WHERE id = (SELECT id FROM q WHERE topic = 't' AND state = 0 AND due <= ? ORDER BY due, id LIMIT 1)
			RETURNING id, data`, now+30e6, now).Scan(&id, &got)
		if err != nil {
			b.Fatal(fmt.Errorf("claim: %w", err))
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM q WHERE id = ? AND state = 1`, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// Run runs every measurement with open.
func Run(b *testing.B, open Open) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run("enqueue/sync="+sync, func(b *testing.B) { Enqueue(b, open, sync) })
		b.Run("drain/sync="+sync, func(b *testing.B) { Drain(b, open, sync) })
	}
}
