package sqlitepubsub_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// openFile opens a PubSub on path, closed at the test's end.
func openFile(t *testing.T, path string) *sqlitepubsub.PubSub {
	t.Helper()
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// madeFile makes a file with the tables and one message, and closes it
// (its WAL checkpointed into it).
func madeFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "made.db")
	ps, err := sqlitepubsub.Open(path, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Topic("t").Enqueue(context.Background(), bytes.Repeat([]byte("m"), 10_000)); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNotADatabase: a file that is not SQLite's gives ErrNotDatabase, and
// is left as it was.
func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	text := bytes.Repeat([]byte("these are notes, not a database\n"), 200)
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	ps := openFile(t, path)
	ctx := context.Background()
	err := ps.Topic("t").Enqueue(ctx, []byte("x"))
	t.Logf("Enqueue: %v", err)
	if !errors.Is(err, sqlitepubsub.ErrNotDatabase) {
		t.Fatalf("Enqueue on a text file: %v, want ErrNotDatabase", err)
	}
	if _, err := ps.Topic("t").Dequeue(ctx); !errors.Is(err, sqlitepubsub.ErrNotDatabase) {
		t.Fatalf("Dequeue on a text file: %v, want ErrNotDatabase", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, text) {
		t.Fatal("the text file was changed")
	}
}

// TestForeignTables: a file whose table conveyor_messages is not the
// package's gives ErrForeignSchema.
func TestForeignTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE conveyor_messages (name TEXT)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	err = openFile(t, path).Topic("t").Enqueue(context.Background(), []byte("x"))
	t.Logf("Enqueue: %v", err)
	if !errors.Is(err, sqlitepubsub.ErrForeignSchema) {
		t.Fatalf("Enqueue on a file with a foreign conveyor_messages: %v, want ErrForeignSchema", err)
	}
}

// TestCorruptFile: a file whose pages were overwritten gives ErrCorrupt.
func TestCorruptFile(t *testing.T) {
	path := madeFile(t)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	// Every page but the first (the header and the schema's root).
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, int(st.Size())-4096), 4096); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	ps := openFile(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ps.Topic("t").Dequeue(ctx)
	t.Logf("Dequeue: %v", err)
	if !errors.Is(err, sqlitepubsub.ErrCorrupt) {
		t.Fatalf("Dequeue on a corrupt file: %v, want ErrCorrupt", err)
	}
}

// TestReadOnlyFile: a file that cannot be written gives ErrReadOnly on
// every write; its messages can still be looked at.
func TestReadOnlyFile(t *testing.T) {
	path := madeFile(t)
	readOnly(t, path)
	ps := openFile(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topic := ps.Topic("t")
	err := topic.Enqueue(ctx, []byte("x"))
	t.Logf("Enqueue: %v", err)
	if !errors.Is(err, sqlitepubsub.ErrReadOnly) {
		t.Fatalf("Enqueue on a read-only file: %v, want ErrReadOnly", err)
	}
	if _, err := topic.Dequeue(ctx); !errors.Is(err, sqlitepubsub.ErrReadOnly) {
		t.Fatalf("Dequeue on a read-only file: %v, want ErrReadOnly", err)
	}
}

// readOnly makes path unwritable, also for root (the immutable
// attribute), until the test ends.
func readOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i (root ignores file modes): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
}

// TestFullFile: a file that cannot grow (max_page_count, as a full disk)
// gives ErrFull; the enqueue that did not fit left nothing, those before
// it are all there.
func TestFullFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	sqldb, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=max_page_count(64)")
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	t.Cleanup(func() { _ = db.Close() })
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx := context.Background()
	topic := ps.Topic("t")
	data := bytes.Repeat([]byte("d"), 20_000)
	n := 0
	for ; n < 100; n++ {
		err = topic.Enqueue(ctx, data)
		if err != nil {
			break
		}
	}
	t.Logf("Enqueue %d: %v", n+1, err)
	if !errors.Is(err, sqlitepubsub.ErrFull) {
		t.Fatalf("enqueue %d of 20 kB in a file of 64 pages: %v, want ErrFull", n+1, err)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not say full", err)
	}
	st, err := admin.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != int64(n) {
		t.Fatalf("%d ready after %d enqueues that returned nil, want them all and nothing of the failed one", st.Ready, n)
	}
}

// TestVerify: Verify reports a file without the tables, and does not make
// them; after the first call it passes.
func TestVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := sqlitepubsub.OpenDB(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for range 2 {
		if err := sqlitepubsub.Verify(ctx, db); !errors.Is(err, sqlitepubsub.ErrNotMigrated) {
			t.Fatalf("Verify of a new file: %v, want ErrNotMigrated", err)
		}
	}
	if err := sqlitepubsub.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := sqlitepubsub.Verify(ctx, db); err != nil {
		t.Fatalf("Verify after Migrate: %v", err)
	}
}
